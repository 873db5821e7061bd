import type { AiRunner } from "../../src/providers/workers-ai.ts";

/**
 * Workers AI over Cloudflare's REST API (`POST /accounts/:id/ai/run/:model`),
 * for `npm run eval:answers -- --remote`: the same model calls the worker's
 * AI binding makes, from Node. Identical inputs are answered from memory, so
 * a threshold sweep embeds each question once.
 */
export class RestAiRunner implements AiRunner {
  private readonly memo = new Map<string, Promise<unknown>>();

  constructor(
    private readonly accountId: string,
    private readonly apiToken: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  run(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    const key = `${model}\n${JSON.stringify(inputs)}`;
    let pending = this.memo.get(key);
    if (!pending) {
      pending = this.call(model, inputs);
      pending.catch(() => this.memo.delete(key));
      this.memo.set(key, pending);
    }
    return pending;
  }

  private async call(model: string, inputs: Record<string, unknown>): Promise<unknown> {
    const url = `https://api.cloudflare.com/client/v4/accounts/${encodeURIComponent(this.accountId)}/ai/run/${model}`;
    const response = await this.fetchImpl(url, {
      method: "POST",
      headers: { Authorization: `Bearer ${this.apiToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ ...inputs, stream: false }),
    });
    const body = (await response.json().catch(() => null)) as {
      success?: boolean;
      result?: unknown;
      errors?: { message?: string }[];
    } | null;
    if (!response.ok || !body?.success)
      throw new Error(
        `Workers AI ${model} failed (${response.status}): ${body?.errors?.map((e) => e.message).join("; ") ?? "no body"}`,
      );
    return body.result;
  }
}

/** The account the remote evaluation runs against, or why it cannot run. */
export function remoteAccount(
  env: Record<string, string | undefined>,
): { accountId: string; apiToken: string } | { missing: string[] } {
  const accountId = env.CLOUDFLARE_ACCOUNT_ID?.trim() ?? "";
  const apiToken = env.CLOUDFLARE_API_TOKEN?.trim() ?? "";
  const missing = [
    ...(accountId ? [] : ["CLOUDFLARE_ACCOUNT_ID"]),
    ...(apiToken ? [] : ["CLOUDFLARE_API_TOKEN"]),
  ];
  return missing.length > 0 ? { missing } : { accountId, apiToken };
}
