import type { AiRunner } from "./workers-ai.ts";

/**
 * A second opinion from a Workers AI safety model (Llama Guard 3). It
 * answers `safe` or `unsafe` with MLCommons hazard codes (S1–S14); the
 * binding returns either an object (`{safe, categories}`) or the model's
 * raw text ("unsafe\nS12"), so both are read.
 */

export interface GuardVerdict {
  safe: boolean;
  /** Hazard codes such as "S12" when unsafe. */
  categories: string[];
}

export interface SafetyGuard {
  readonly model: string;
  check(question: string): Promise<GuardVerdict>;
}

export const DEFAULT_GUARD_MODEL = "@cf/meta/llama-guard-3-8b";

function parseText(text: string): GuardVerdict {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) return parseObject(JSON.parse(trimmed));
  const [first = "", ...rest] = trimmed.split(/\s+/);
  const verdict = first.toLowerCase();
  if (verdict !== "safe" && verdict !== "unsafe")
    throw new Error(`unreadable safety verdict: ${trimmed.slice(0, 40)}`);
  const categories = rest
    .join(",")
    .split(/[,\s]+/)
    .filter((code) => /^S\d+$/i.test(code));
  return { safe: verdict === "safe", categories: categories.map((code) => code.toUpperCase()) };
}

function parseObject(value: unknown): GuardVerdict {
  const record = (value ?? {}) as { safe?: unknown; categories?: unknown };
  if (typeof record.safe !== "boolean") throw new Error("safety verdict without a `safe` flag");
  const categories = Array.isArray(record.categories)
    ? record.categories.filter((code): code is string => typeof code === "string")
    : [];
  return { safe: record.safe, categories };
}

export class WorkersAiLlamaGuard implements SafetyGuard {
  constructor(
    private readonly ai: AiRunner,
    readonly model: string = DEFAULT_GUARD_MODEL,
  ) {}

  async check(question: string): Promise<GuardVerdict> {
    const output = (await this.ai.run(this.model, {
      messages: [{ role: "user", content: question }],
      response_format: { type: "json_object" },
    })) as { response?: unknown } | null;
    const response = output?.response;
    if (typeof response === "string") return parseText(response);
    return parseObject(response);
  }
}
