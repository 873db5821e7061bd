import type { PortfolioDocument } from "./documents.ts";

/**
 * Word-count chunking (500 words, 50 overlap by default): paragraphs are
 * kept whole when they fit, oversized ones are split by line, then by
 * sentence, then into fixed word windows; consecutive chunks share at least
 * `overlap` words of trailing paragraphs; paragraphs with different labels
 * (`Technologies:` vs `Recommendation from:`) are not packed together once a
 * chunk has some substance. A document's prefix is repeated on every chunk.
 */

export interface Chunk {
  source: PortfolioDocument["source"];
  sourceId: string;
  itemId: string;
  title: string;
  chunkIndex: number;
  content: string;
}

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

function cleanParagraph(paragraph: string): string {
  return paragraph
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .join("\n");
}

function wordWindows(text: string, size: number): string[] {
  const words = text.split(/\s+/).filter(Boolean);
  const out: string[] = [];
  for (let i = 0; i < words.length; i += size) out.push(words.slice(i, i + size).join(" "));
  return out;
}

/** Greedily re-packs pieces (joined by `separator`) up to `size` words. */
function pack(pieces: string[], size: number, separator: string): string[] {
  const out: string[] = [];
  let current: string[] = [];
  let count = 0;
  for (const piece of pieces) {
    const n = wordCount(piece);
    if (current.length > 0 && count + n > size) {
      out.push(current.join(separator));
      current = [];
      count = 0;
    }
    current.push(piece);
    count += n;
  }
  if (current.length > 0) out.push(current.join(separator));
  return out;
}

function splitOversized(block: string, size: number): string[] {
  if (wordCount(block) <= size) return [block];
  const byLine = block.split("\n").filter(Boolean);
  if (byLine.length > 1)
    return pack(
      byLine.flatMap((line) => splitOversized(line, size)),
      size,
      "\n",
    );
  const sentences = block.split(/(?<=[.!?])\s+(?=[A-Z0-9"'])/);
  if (sentences.length > 1)
    return pack(
      sentences.flatMap((sentence) => splitOversized(sentence, size)),
      size,
      " ",
    );
  return wordWindows(block, size);
}

/** A paragraph's "family": `bullet`, a leading `Label:` or a short title line. */
export function familyLabel(block: string): string | null {
  const first =
    block
      .split("\n")
      .find((line) => line.trim())
      ?.trim() ?? "";
  if (first.startsWith("- ")) return "bullet";
  const label = /^([A-Za-z][A-Za-z /&+-]{1,40}):/.exec(first);
  if (label) return label[1]!.toLowerCase();
  const titleWords = first.split(/\s+/);
  if (titleWords.length <= 6 && titleWords.every((w) => /^[A-Z0-9&]/.test(w)))
    return first.toLowerCase();
  return null;
}

export function chunkText(text: string, size: number, overlap: number): string[] {
  if (size <= 0 || !text.trim()) return [];
  const effectiveOverlap = Math.max(0, Math.min(overlap, size - 1));
  const blocks = text
    .split(/\n\s*\n/)
    .map(cleanParagraph)
    .filter(Boolean)
    .flatMap((paragraph) => splitOversized(paragraph, size));

  const chunks: string[] = [];
  let current: string[] = [];
  let count = 0;
  const minForTopicSplit = Math.max(8, Math.floor(size * 0.35));
  for (const block of blocks) {
    const n = wordCount(block);
    const last = current[current.length - 1];
    const labelsDiffer =
      last !== undefined &&
      familyLabel(last) !== null &&
      familyLabel(block) !== null &&
      familyLabel(last) !== familyLabel(block);
    if (current.length > 0 && count + n > size) {
      chunks.push(current.join("\n\n"));
      // Carry trailing whole paragraphs forward until the overlap is reached.
      const carried: string[] = [];
      let carriedWords = 0;
      for (let i = current.length - 1; i >= 0 && carriedWords < effectiveOverlap; i--) {
        carried.unshift(current[i]!);
        carriedWords += wordCount(current[i]!);
      }
      while (carried.length > 0 && carriedWords + n > size) {
        carriedWords -= wordCount(carried.shift()!);
      }
      current = carried;
      count = carriedWords;
    } else if (current.length > 0 && labelsDiffer && count >= minForTopicSplit) {
      chunks.push(current.join("\n\n"));
      current = [];
      count = 0;
    }
    current.push(block);
    count += n;
  }
  if (current.length > 0) chunks.push(current.join("\n\n"));
  return chunks;
}

/** Chunks a document, repeating its prefix on every chunk when it is split. */
export function chunkDocument(doc: PortfolioDocument, size: number, overlap: number): Chunk[] {
  const base = { source: doc.source, sourceId: doc.sourceId, itemId: doc.itemId, title: doc.title };
  const prefixWords = wordCount(doc.prefix);
  let contents: string[];
  if (doc.prefix && prefixWords < size && doc.text.startsWith(doc.prefix)) {
    const body = doc.text.slice(doc.prefix.length).trim();
    const bodySize = size - prefixWords;
    const bodyChunks = chunkText(body, bodySize, Math.min(overlap, bodySize - 1));
    contents =
      bodyChunks.length <= 1
        ? [doc.text.trim()]
        : bodyChunks.map((chunk) => `${doc.prefix}\n\n${chunk}`);
  } else {
    contents = chunkText(doc.text, size, overlap);
  }
  return contents.map((content, chunkIndex) => ({ ...base, chunkIndex, content }));
}
