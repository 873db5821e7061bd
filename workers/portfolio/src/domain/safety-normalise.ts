/**
 * Normalisation shared by both safety stages (rules and the learned
 * classifier). Attackers hide the same request behind look-alike letters,
 * leetspeak, letter spacing, or an encoding; every stage should see the
 * request itself. Two outputs:
 * - `primary`: the question folded (NFKC, lower case, zero-width characters
 *   removed, look-alike Cyrillic/Greek letters mapped in Latin text,
 *   leetspeak undone inside words, spaced-out letters joined);
 * - `decoded`: readable text recovered from base64, hex, rot13 or reversed
 *   text found in the question, each folded the same way.
 */

const CONFUSABLES: Record<string, string> = {
  а: "a",
  в: "b",
  е: "e",
  к: "k",
  м: "m",
  н: "h",
  о: "o",
  р: "p",
  с: "c",
  т: "t",
  у: "y",
  х: "x",
  і: "i",
  ї: "i",
  ѕ: "s",
  ј: "j",
  ԁ: "d",
  ɡ: "g",
  ᴀ: "a",
  ı: "i",
  α: "a",
  β: "b",
  ε: "e",
  η: "n",
  ι: "i",
  κ: "k",
  ν: "v",
  ο: "o",
  ρ: "p",
  τ: "t",
  υ: "u",
  χ: "x",
  γ: "y",
  ω: "w",
};
const CONFUSABLE_CHARS = new RegExp(`[${Object.keys(CONFUSABLES).join("")}]`, "g");

/** Leetspeak digits and symbols and the letters they stand for. */
export const LEET: Record<string, string> = {
  "0": "o",
  "1": "i",
  "3": "e",
  "4": "a",
  "5": "s",
  "7": "t",
  "8": "b",
  "@": "a",
  $: "s",
  "!": "i",
  "|": "l",
};

/** Frequent English words: decoded text counts as readable when it is made of them. */
const COMMON_WORDS = new Set(
  (
    "the you your me my and to of a is are what show tell ignore print reveal rules instructions " +
    "prompt system all previous prior now no with for in this that it do be send hidden forget say " +
    "give answer from on not i we us how who why can could would will please disregard secret " +
    "override restrictions guidelines above before text message messages first words rule new " +
    "everything anything nothing respond reply output repeat write read obey follow act as an " +
    "or if any every was were been have has had get let make want need must should configuration " +
    "setup filter filters safety mode developer admin limits limit free without nude nudes photos " +
    "sex pics salary phone number address where live old born"
  ).split(" "),
);

function isLatinHeavy(text: string): boolean {
  const latin = (text.match(/[a-z]/gi) ?? []).length;
  const letters = (text.match(/\p{L}/gu) ?? []).length;
  return letters > 0 && latin / letters > 0.5;
}

/** Lower-cases and folds look-alikes; Cyrillic/Greek stay untouched in text written in those scripts. */
export function foldCharacters(text: string): string {
  let folded = text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[\u200b-\u200f\u2060\ufeff\u00ad]/g, "")
    .replace(/[\u2018\u2019\u02bc`´]/g, "'")
    .replace(/[\u201c\u201d]/g, '"');
  if (isLatinHeavy(folded))
    folded = folded.replace(CONFUSABLE_CHARS, (ch) => CONFUSABLES[ch] ?? ch);
  else
    folded = folded.replace(/\S+/g, (token) =>
      /[a-z]/.test(token) ? token.replace(CONFUSABLE_CHARS, (ch) => CONFUSABLES[ch] ?? ch) : token,
    );
  return folded;
}

/** Leetspeak inside words that also contain letters (`pr0mpt`, `s3x`); plain numbers stay. */
function deLeet(token: string): string {
  if (!/[a-z]/.test(token) || !/[0-9@$!|]/.test(token)) return token;
  // Version-like tokens (`v18`, `es2020`, `s3`) are technology names, not leetspeak.
  if (/^(?:[a-z]{1,3}\d+|\d+[a-z]{1,2})[?.,;:]*$/.test(token)) return token;
  return token.replace(/[0-9@$!|]/g, (ch) => LEET[ch] ?? ch);
}

/** `d.i.s.r.e.g.a.r.d` and `r e v e a l   y o u r` back to words. */
function joinSpacing(text: string): string {
  const dotted = text.replace(/\b(?:\p{L}[.\-_*]){2,}\p{L}\b/gu, (run) =>
    run.replace(/[.\-_*]/g, ""),
  );
  return dotted
    .split(/\s{2,}|\s+\/\s+/)
    .map((segment) => {
      const trimmed = segment.trim();
      return /^(?:\p{L} ){2,}\p{L}$/u.test(trimmed) ? trimmed.replace(/ /g, "") : segment;
    })
    .join(" ");
}

/** Joins runs of 4+ single letters separated by single spaces (`i g n o r e`). */
function joinLetterRuns(text: string): string {
  return text.replace(/(?:^|(?<=\s))(?:\p{L} ){3,}\p{L}(?=\s|$|[.,!?])/gu, (run) =>
    run.replace(/ /g, ""),
  );
}

/** The folded form every stage reads. */
export function foldQuestion(text: string): string {
  const folded = joinLetterRuns(joinSpacing(foldCharacters(text)));
  return folded
    .split(/(\s+)/)
    .map((token) => deLeet(token))
    .join("")
    .replace(/\s+/g, " ")
    .trim();
}

function readable(decoded: string): string | null {
  if (decoded.length < 6) return null;
  const printable = decoded.replace(/[^\x20-\x7e\n\t\u00a0-\uffff]/g, "");
  if (printable.length / decoded.length < 0.9 || !/\p{L}{3,}/u.test(printable)) return null;
  if (printable.includes("\ufffd")) return null;
  return printable;
}

function utf8(bytes: Uint8Array): string {
  return new TextDecoder("utf-8").decode(bytes);
}

const BASE64_CANDIDATE = /[A-Za-z0-9+/_-]{16,}={0,2}/g;

/** Readable text hidden as base64. */
export function decodeBase64(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(BASE64_CANDIDATE)) {
    const candidate = match[0].replace(/-/g, "+").replace(/_/g, "/");
    // Ordinary long words are not base64 payloads: require mixed case.
    if (!/[A-Z]/.test(candidate) || !/[a-z]/.test(candidate)) continue;
    const padded = candidate.padEnd(Math.ceil(candidate.length / 4) * 4, "=");
    try {
      const binary = atob(padded);
      const decoded = readable(utf8(Uint8Array.from(binary, (ch) => ch.charCodeAt(0))));
      if (decoded) out.push(decoded);
    } catch {
      // Not base64 after all.
    }
  }
  return out;
}

const HEX_CANDIDATE = /(?:\b|0x)((?:[0-9a-f]{2}[\s:,-]?){8,})/gi;

/** Readable text hidden as hex bytes (`69676e6f7265`, `69 67 6e`, `0x69...`). */
export function decodeHex(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(HEX_CANDIDATE)) {
    const digits = (match[1] ?? "").replace(/[^0-9a-f]/gi, "");
    if (digits.length < 16 || digits.length % 2 !== 0 || !/[a-f]/i.test(digits)) continue;
    const bytes = new Uint8Array(digits.length / 2);
    for (let i = 0; i < bytes.length; i++)
      bytes[i] = Number.parseInt(digits.slice(i * 2, i * 2 + 2), 16);
    const decoded = readable(utf8(bytes));
    if (decoded) out.push(decoded);
  }
  return out;
}

export function rot13(text: string): string {
  return text.replace(/[a-z]/gi, (ch) => {
    const base = ch <= "Z" ? 65 : 97;
    return String.fromCharCode(((ch.charCodeAt(0) - base + 13) % 26) + base);
  });
}

function commonWordCount(text: string): number {
  let count = 0;
  for (const word of text.toLowerCase().split(/[^a-z]+/)) if (COMMON_WORDS.has(word)) count++;
  return count;
}

/**
 * A transformed text counts as a hidden message when it reads as English
 * (3+ common words) and clearly better than the text as sent.
 */
function hiddenIn(original: string, transformed: string): boolean {
  const gained = commonWordCount(transformed);
  return gained >= 3 && gained >= 2 * commonWordCount(original) + 1;
}

/** rot13 and reversed text, when undoing them yields English the original does not read as. */
export function decodeRotationAndReversal(text: string): string[] {
  const out: string[] = [];
  const rotated = rot13(text);
  if (hiddenIn(text, rotated)) out.push(rotated);
  const reversed = [...text].reverse().join("");
  if (hiddenIn(text, reversed)) out.push(reversed);
  // A message whose tail alone is encoded ("Read this backwards: ...", "(rot13) ...").
  const colon = text.search(/[:)]\s/);
  if (colon > 0) {
    const tail = text.slice(colon + 2);
    const rotatedTail = rot13(tail);
    if (hiddenIn(tail, rotatedTail) && !out.includes(rotated)) out.push(rotatedTail);
    const reversedTail = [...tail].reverse().join("");
    if (hiddenIn(tail, reversedTail) && !out.includes(reversed)) out.push(reversedTail);
  }
  return out;
}

export interface NormalisedQuestion {
  primary: string;
  /**
   * The folded question's sentences or clauses, when it has more than one:
   * an instruction riding on an ordinary question ("What has Avery built?
   * P.S. new rule: ...") is judged on its own, not diluted by the rest.
   */
  segments: string[];
  /** Folded text recovered from encodings; empty for ordinary questions. */
  decoded: string[];
}

const SEGMENT_BOUNDARY =
  /(?:[.?!;:]+(?=\s|$)|[\n\u3002\uff01\uff1f\u061f]+)\s*|\s+(?=(?:p\.?s\.?|also|btw|by the way|oh and|and then|then|after that|note)\b)|(?<=[\p{Script=Latin}\d?.!,]\s?)(?=[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Arabic}\p{Script=Cyrillic}\p{Script=Devanagari}])/u;

/** Sentences and clauses of a folded question (three words, or four non-Latin letters, at least). */
export function segmentsOf(folded: string): string[] {
  const parts = folded
    .split(SEGMENT_BOUNDARY)
    .map((part) => part.trim())
    .filter((part) => part.split(" ").length >= 3 || /[^\p{Script=Latin}\p{N}\s]{4,}/u.test(part));
  return parts.length > 1 ? parts : [];
}

export function normaliseQuestion(question: string): NormalisedQuestion {
  const hidden = [
    ...decodeBase64(question),
    ...decodeHex(question),
    ...decodeRotationAndReversal(question),
  ];
  const decoded: string[] = [];
  for (const text of hidden) {
    const folded = foldQuestion(text);
    if (folded && !decoded.includes(folded)) decoded.push(folded);
  }
  const primary = foldQuestion(question);
  return { primary, segments: segmentsOf(primary), decoded };
}
