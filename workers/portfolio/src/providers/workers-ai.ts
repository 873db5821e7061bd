import type { ChatMessage, Embedder, EmbeddingKind, Generator } from "./types.ts";

/** The slice of the Workers AI binding this service uses (also what test doubles implement). */
export interface AiRunner {
  run(model: string, inputs: Record<string, unknown>): Promise<unknown>;
}

// bge models retrieve better when queries (not passages) carry this instruction.
const BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: ";
const EMBEDDING_BATCH = 100;

export class WorkersAiEmbedder implements Embedder {
  constructor(
    private readonly ai: AiRunner,
    readonly model: string,
  ) {}

  async embed(texts: string[], kind: EmbeddingKind): Promise<number[][]> {
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += EMBEDDING_BATCH) {
      const batch = texts
        .slice(i, i + EMBEDDING_BATCH)
        .map((text) =>
          kind === "query" && this.model.includes("bge") ? BGE_QUERY_INSTRUCTION + text : text,
        );
      const output = (await this.ai.run(this.model, { text: batch, pooling: "cls" })) as {
        data?: number[][];
      };
      if (!Array.isArray(output?.data) || output.data.length !== batch.length)
        throw new Error(`embedding model ${this.model} returned no vectors`);
      vectors.push(...output.data);
    }
    return vectors;
  }
}

/** Pulls text deltas out of Workers AI's server-sent event stream. */
export async function* textDeltas(stream: ReadableStream<Uint8Array>): AsyncIterable<string> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffered += value;
      const events = buffered.split(/\r?\n/);
      buffered = events.pop() ?? "";
      for (const line of events) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (!data || data === "[DONE]") continue;
        const parsed = JSON.parse(data) as {
          response?: string;
          choices?: { delta?: { content?: string } }[];
        };
        const delta = parsed.response ?? parsed.choices?.[0]?.delta?.content ?? "";
        if (delta) yield delta;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

export class WorkersAiGenerator implements Generator {
  readonly name: string;

  constructor(
    private readonly ai: AiRunner,
    private readonly model: string,
    private readonly options: { maxTokens: number; temperature: number },
  ) {
    this.name = model;
  }

  async *stream(messages: ChatMessage[]): AsyncIterable<string> {
    const output = await this.ai.run(this.model, {
      messages,
      stream: true,
      max_tokens: this.options.maxTokens,
      temperature: this.options.temperature,
    });
    if (output instanceof ReadableStream) {
      yield* textDeltas(output as ReadableStream<Uint8Array>);
      return;
    }
    // Some models ignore `stream` and answer in one piece.
    const text = (output as { response?: string } | null)?.response;
    if (typeof text !== "string")
      throw new Error(`generation model ${this.model} returned no text`);
    if (text) yield text;
  }
}
