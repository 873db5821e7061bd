/**
 * Polls `check` every 250 ms until it gives a value (not undefined) and
 * returns it; throws naming `what` after `timeoutMs`. For effects that land
 * asynchronously (queues, webhooks, Durable Object state).
 */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
