/** The comparison key for train/test overlap: case, punctuation and spacing ignored. */
export function overlapKey(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}
