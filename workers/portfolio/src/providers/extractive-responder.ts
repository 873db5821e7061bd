import { extractiveAnswer } from "../domain/extractive.ts";
import { parseContext } from "../domain/prompt.ts";
import type { Persona } from "../domain/settings.ts";
import { wordPieces } from "../domain/text.ts";
import type { ChatMessage, Generator } from "./types.ts";

/**
 * The local generator: reads the retrieved chunks back out of the prompt's
 * context block and answers extractively from them, streamed word by word.
 * Yields nothing when the context holds no usable evidence, which the
 * pipeline treats like a blank model answer.
 */
export class ExtractiveResponder implements Generator {
  readonly name = "extractive";

  constructor(private readonly persona: Persona) {}

  async *stream(messages: ChatMessage[]): AsyncIterable<string> {
    const system = messages.find((message) => message.role === "system")?.content ?? "";
    const question = [...messages].reverse().find((message) => message.role === "user")?.content;
    if (!question) return;
    const answer = extractiveAnswer(question, parseContext(system), this.persona);
    if (!answer) return;
    for (const piece of wordPieces(answer)) yield piece;
  }
}
