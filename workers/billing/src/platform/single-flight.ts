/**
 * Runs one task at a time inside a Durable Object: a caller that arrives
 * while a run is in flight waits for it to settle, then starts its own run
 * (the work it asked for may not have been covered by the earlier one).
 */
export class SingleFlight<T> {
  private running: Promise<T> | null = null;

  async run(task: () => Promise<T>): Promise<T> {
    while (this.running) await this.running.catch(() => undefined);
    const run = task();
    this.running = run;
    try {
      return await run;
    } finally {
      if (this.running === run) this.running = null;
    }
  }
}
