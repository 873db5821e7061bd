import { contentTerms, STOP_WORDS, stem, TECHNOLOGY_CATEGORIES, tokenize } from "./text.ts";

/**
 * The answerability check: may the retrieved evidence answer this question?
 *
 * Retrieval always returns the nearest chunks, even for things the portfolio
 * never mentions ("Has Avery used Kubernetes?" retrieves the skills line).
 * So before anything is generated, the question's key terms (what it is
 * about: named things, technologies, companies, details; not the frame words
 * every question uses, such as "use", "company" or "when") must all be
 * supported by one portfolio item among the retrieved chunks, and the item
 * must hold the kind of fact the question asks for (a date for "when", a
 * number for "how many"). Otherwise the answer is a decline that names what
 * is missing. The same check runs before the model call in production and
 * before the local extractive responder.
 */

export type QuestionType =
  | "when"
  | "duration"
  | "count"
  | "why"
  | "who_said"
  | "who"
  | "where"
  | "yes_no"
  | "what";

export function questionType(question: string): QuestionType {
  const q = question
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .trim();
  if (/^why\b|\bfor what reason\b/.test(q)) return "why";
  if (/\bhow long\b|\bfor how many years\b/.test(q)) return "duration";
  if (/^when\b|\b(what|which) year\b|\bsince when\b|\bwhat date\b/.test(q)) return "when";
  if (
    /\bhow (many|much|big|large|fast|often)\b|\bwhat (number|percentage|share)\b|\bby how much\b/.test(
      q,
    )
  )
    return "count";
  if (
    /\bwho\b.*\b(said|say|says|wrote|write|writes|described?|describes|call(s|ed)?|praised?|mentioned|thinks?|recommended|quote)\b/.test(
      q,
    )
  )
    return "who_said";
  if (/^who\b/.test(q)) return "who";
  if (/^where\b/.test(q)) return "where";
  if (/^(is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b/.test(q))
    return "yes_no";
  return "what";
}

/**
 * Words that frame a question rather than name what it is about. Stemmed
 * (see `stem`). A question made only of these is answerable from whatever
 * retrieval found best; any other term must be in the evidence.
 */
const FRAME_TERMS = new Set(
  [
    // verbs every question uses
    "use",
    "used",
    "using",
    "work",
    "do",
    "doing",
    "done",
    "make",
    "made",
    "create",
    "created",
    "develop",
    "developed",
    "build",
    "get",
    "got",
    "handle",
    "deal",
    "involve",
    "involved",
    "responsible",
    "responsibility",
    "focus",
    "list",
    "listed",
    "mention",
    "mentioned",
    "say",
    "said",
    "describe",
    "described",
    "call",
    "called",
    "think",
    "wrote",
    "write",
    "written",
    "explain",
    "share",
    "try",
    "see",
    "find",
    "view",
    "visit",
    "access",
    "check",
    "look",
    "learn",
    "hold",
    "held",
    "serve",
    "served",
    "attend",
    "attended",
    "employ",
    "employed",
    "familiar",
    "comfortable",
    "proficient",
    "experienced",
    "skilled",
    "program",
    "programs",
    "coding",
    "solve",
    "solved",
    "problem",
    "purpose",
    "goal",
    "reduce",
    "reduced",
    "improve",
    "improved",
    "achieve",
    "achieved",
    "accomplish",
    "accomplished",
    "hire",
    "hiring",
    "url",
    "link",
    "add",
    "added",
    "feature",
    "name",
    "full",
    "online",
    "themselves",
    "themself",
    "himself",
    "herself",
    "yourself",
    "process",
    "besides",
    "except",
    "other",
    "apart",
    "provider",
    "vendor",
    "increase",
    "increased",
    "decrease",
    "decreased",
    "rise",
    "rose",
    "boost",
    "boosted",
    "lift",
    "percentage",
    "highest",
    "lowest",
    "best",
    "biggest",
    "largest",
    "most",
    "available",
    "connect",
    "message",
    // what other people say
    "colleague",
    "coworker",
    "peer",
    "feedback",
    "testimonial",
    "recommendation",
    "review",
    "reference",
    "endorsement",
    "opinion",
    // quantities and time
    "since",
    "many",
    "much",
    "number",
    "big",
    "large",
    "often",
    "amount",
    "total",
    "count",
    "year",
    "month",
    "time",
    "long",
    "date",
    "current",
    "currently",
    "now",
    "today",
    "still",
    "ever",
    "again",
    "actually",
    "really",
    "exactly",
    "recent",
    "recently",
    "each",
    "every",
    "per",
    // what the portfolio is organised by
    "company",
    "employer",
    "organization",
    "organisation",
    "firm",
    "business",
    "place",
    "job",
    "role",
    "position",
    "title",
    "project",
    "product",
    "app",
    "application",
    "tech",
    "technology",
    "stack",
    "tool",
    "language",
    "programming",
    "framework",
    "library",
    "database",
    "platform",
    "cloud",
    "service",
    "skill",
    "expertise",
    "experience",
    "background",
    "career",
    "history",
    "portfolio",
    "profile",
    "personal",
    "kind",
    "type",
    "sort",
    "thing",
    "anything",
    "something",
    "main",
    "primary",
    "key",
    "specific",
    "specifically",
    "detail",
    "information",
    "info",
    "person",
    "someone",
    "anyone",
    "open",
    // places and contact
    "contact",
    "reach",
    "touch",
    "email",
    "address",
    "study",
    "degree",
    "education",
  ].map(stem),
);

/**
 * Order words frame a question about jobs ("Avery's first employer", "before
 * Northwind Health": the dates answer it); elsewhere the portfolio does not
 * order things ("Avery's first programming language" is not stated).
 */
const ORDER_TERMS = new Set(
  [
    "first",
    "earliest",
    "latest",
    "last",
    "previous",
    "prior",
    "next",
    "before",
    "after",
    "recent",
  ].map(stem),
);
const JOB_QUESTION =
  /\b(work|worked|job|jobs|employer|employers|company|companies|role|roles|position|title)\b/i;

/** Frame words only when the question asks when or how long ("when did Avery leave X"). */
const TIME_FRAME_TERMS = new Set(
  [
    "start",
    "started",
    "begin",
    "began",
    "join",
    "joined",
    "leave",
    "left",
    "end",
    "ended",
    "finish",
    "finished",
    "stop",
    "stopped",
    "graduate",
    "graduated",
    "launch",
    "launched",
    "release",
    "released",
    "move",
    "moved",
    "been",
    "stay",
    "stayed",
  ].map(stem),
);

/**
 * Two-word terms that mean something neither word does ("open source" is not
 * "source id"), joined into one term in questions and evidence alike.
 */
const COMPOUNDS: [string, string][] = [
  ["open", "source"],
  ["machine", "learning"],
  ["deep", "learning"],
  ["react", "native"],
  ["sql", "server"],
  ["google", "cloud"],
  ["full", "stack"],
];

export function joinCompounds(text: string): string {
  let out = text;
  for (const [first, second] of COMPOUNDS)
    out = out.replace(new RegExp(`\\b(${first})[\\s-]+(${second})\\b`, "gi"), "$1-$2");
  return out;
}

/** Back to the question's spacing for display ("Google Cloud", not "Google-Cloud"). */
function splitCompounds(text: string): string {
  let out = text;
  for (const [first, second] of COMPOUNDS)
    out = out.replace(new RegExp(`\\b(${first})-(${second})\\b`, "gi"), "$1 $2");
  return out;
}

/** Lines that describe a chunk rather than state a fact about the person. */
export const META_LINE = /^(Evidence Type|Useful for queries about|Resume Section):/;

export interface KeyTerm {
  /** The stemmed term. */
  term: string;
  /** The question's own words for it (a capitalised run such as "Google Cloud" stays whole). */
  surface: string;
}

interface QuestionToken {
  raw: string;
  term: string;
  start: number;
  end: number;
}

/** "20,000" as one number and compounds joined; token offsets and surfaces refer to this text. */
function normalizedQuestion(question: string): string {
  return joinCompounds(question.replace(/(\d),(?=\d{3}\b)/g, "$1"));
}

function questionTokens(question: string): QuestionToken[] {
  const out: QuestionToken[] = [];
  // Walk the original text so each token keeps its surface form.
  const pattern = /[A-Za-z0-9][A-Za-z0-9+#./'-]*/g;
  for (const match of normalizedQuestion(question).matchAll(pattern)) {
    const raw = match[0].replace(/'s$/i, "").replace(/[.'/-]+$/, "");
    for (const token of tokenize(raw))
      if (token.length > 1 || /^[a-z0-9]$/.test(token))
        out.push({ raw, term: stem(token), start: match.index, end: match.index + raw.length });
  }
  return out;
}

export function keyTerms(
  question: string,
  ignoredTerms: ReadonlySet<string>,
  type = questionType(question),
): KeyTerm[] {
  const tokens = questionTokens(question);
  const timeQuestion = type === "when" || type === "duration";
  const isKey = (token: QuestionToken) =>
    (token.term.length > 1 || /^\d$/.test(token.term)) &&
    !STOP_WORDS.has(token.raw.toLowerCase()) &&
    !STOP_WORDS.has(token.term) &&
    !ignoredTerms.has(token.term) &&
    !variants(token.term).some((variant) => FRAME_TERMS.has(variant)) &&
    !(timeQuestion && variants(token.term).some((variant) => TIME_FRAME_TERMS.has(variant))) &&
    !(ORDER_TERMS.has(token.term) && JOB_QUESTION.test(question)) &&
    // "go to university" is not the Go language.
    !(token.term === "go" && tokens[tokens.indexOf(token) + 1]?.term === "to");
  const keys: KeyTerm[] = [];
  const seen = new Set<string>();
  tokens.forEach((token, index) => {
    if (!isKey(token) || seen.has(token.term)) return;
    seen.add(token.term);
    // Name the whole capitalised run ("Google Cloud", "AWS Lambda") in a decline.
    const capitalised = (t: QuestionToken | undefined) =>
      t !== undefined && /^[A-Z0-9]/.test(t.raw);
    let start = index;
    let end = index;
    if (capitalised(token) && index > 0) {
      // Not leftwards into the person's name ("Avery Kubernetes"), nor into the first word.
      while (
        start > 1 &&
        capitalised(tokens[start - 1]) &&
        !ignoredTerms.has(tokens[start - 1]!.term)
      )
        start--;
      // Rightwards the name may belong to the thing ("Ask Avery").
      while (end < tokens.length - 1 && capitalised(tokens[end + 1])) end++;
    }
    // The question's own text for the run, so "Parcel & Pine" keeps its ampersand.
    const surface = splitCompounds(
      normalizedQuestion(question).slice(tokens[start]!.start, tokens[end]!.end),
    );
    keys.push({ term: token.term, surface });
  });
  return keys;
}

/** Endings stripped when comparing words ("owned" meets "own", "mentoring" meets "mentor"). */
const SUFFIXES = [
  "ship",
  "ment",
  "ions",
  "ion",
  "ors",
  "or",
  "ing",
  "ed",
  "es",
  "er",
  "s",
  "d",
  "ly",
];

/** Up to two endings stripped ("leadership" → "leader" → "lead"). */
function variants(term: string): string[] {
  const out = [term];
  for (let round = 0; round < 2; round++)
    for (const word of [...out])
      for (const suffix of SUFFIXES)
        if (word.endsWith(suffix) && word.length - suffix.length >= 3) {
          const shorter = word.slice(0, -suffix.length);
          if (!out.includes(shorter)) out.push(shorter);
        }
  return out;
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** The terms of an item's evidence, ready for `supports`. */
export interface EvidenceTerms {
  terms: Set<string>;
  variants: Set<string>;
  years: Set<number>;
  ranges: [number, number][];
  hasYear: boolean;
  hasNumber: boolean;
  hasReason: boolean;
}

/** "four engineers" supports a question about 4 engineers. */
const NUMBER_VALUES: Record<string, string> = {
  one: "1",
  two: "2",
  three: "3",
  four: "4",
  five: "5",
  six: "6",
  seven: "7",
  eight: "8",
  nine: "9",
  ten: "10",
  eleven: "11",
  twelve: "12",
};

const NUMBER_WORDS =
  /\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozen|dozens|hundred|hundreds|thousand|thousands|million|millions|billion|few)\b/i;

export function evidenceTerms(text: string): EvidenceTerms {
  const lines = text.split("\n").filter((line) => !META_LINE.test(line.trim()));
  // "20,000" is one number, so it does not support a question about 20.
  const body = joinCompounds(lines.join("\n").replace(/(\d),(?=\d{3}\b)/g, "$1"));
  const terms = new Set<string>();
  for (const term of contentTerms(body)) {
    terms.add(term);
    // "open-source", "remote-friendly", URLs: the parts count too.
    // (Not numbers: "1.2 seconds" says nothing about 1 second.)
    if (/[-./]/.test(term) && /[a-z]/.test(term))
      for (const part of term.split(/[-./]+/)) if (part.length > 1) terms.add(stem(part));
    const digits = NUMBER_VALUES[term];
    if (digits) terms.add(digits);
  }
  const variantSet = new Set<string>();
  for (const term of terms) for (const variant of variants(term)) variantSet.add(variant);
  const years = new Set<number>();
  for (const match of body.matchAll(/\b(19|20)\d\d\b/g)) years.add(Number(match[0]));
  const ranges: [number, number][] = [];
  const now = new Date().getUTCFullYear();
  for (const match of body.matchAll(
    /\b((?:19|20)\d\d)\s*(?:to|-|–|until)\s*((?:19|20)\d\d|present|now|today)\b/gi,
  ))
    ranges.push([Number(match[1]), /^\d/.test(match[2]!) ? Number(match[2]) : now]);
  return {
    terms,
    variants: variantSet,
    years,
    ranges,
    hasYear: years.size > 0,
    hasNumber: /\d/.test(body.replace(/https?:\/\/\S+/g, "")) || NUMBER_WORDS.test(body),
    hasReason: /^Vision:|\bbecause\b|\bso that\b|\bin order to\b/im.test(body),
  };
}

/**
 * Words that stand for one another when checking evidence ("graduate" is
 * supported by the education entry, "country" by the location). Narrower than
 * the retrieval synonyms: Kubernetes must not be "supported" by Docker.
 */
const SUPPORT_SYNONYMS: readonly (readonly string[])[] = [
  ["education", "degree", "university", "college", "school", "study", "graduate", "thesis", "b.sc"],
  // Not "live": a "Live URL" says nothing about where the person is.
  ["location", "located", "based", "country", "city", "town", "region"],
].map((group) => group.map(stem));

export function supports(evidence: EvidenceTerms, term: string): boolean {
  const members = TECHNOLOGY_CATEGORIES[term];
  if (members?.some((member) => supportsTerm(evidence, stem(member)))) return true;
  const group = SUPPORT_SYNONYMS.find((candidate) => candidate.includes(term));
  if (group?.some((member) => supportsTerm(evidence, member))) return true;
  return supportsTerm(evidence, term);
}

function supportsTerm(evidence: EvidenceTerms, term: string): boolean {
  if (/^(19|20)\d\d$/.test(term)) {
    const year = Number(term);
    return (
      evidence.years.has(year) || evidence.ranges.some(([from, to]) => from <= year && year <= to)
    );
  }
  if (evidence.terms.has(term)) return true;
  if (variants(term).some((variant) => evidence.variants.has(variant))) return true;
  if (term.length < 5 || /[^a-z-]/.test(term)) return false;
  // A longer question word may extend a portfolio word ("healthcare" → "health",
  // "postgresql" → "postgres"), not the other way: "intern" is not "internal".
  for (const candidate of evidence.terms) {
    if (candidate.length > term.length) continue;
    const shared = commonPrefix(term, candidate);
    if (shared >= 5 && shared >= 0.8 * candidate.length) return true;
  }
  return false;
}

export interface EvidenceItem {
  itemId: string;
  content: string;
}

export type AnswerabilityReason = "entity_not_found" | "answer_type_not_found";

export type Answerability =
  | { answerable: true; type: QuestionType; keyTerms: KeyTerm[]; itemIds: string[] }
  | {
      answerable: false;
      reason: AnswerabilityReason;
      /** "names": the question asks which ones, the portfolio only says how many. */
      type: QuestionType | "names";
      keyTerms: KeyTerm[];
      /** Key terms no single retrieved item supports together with the rest. */
      missing: KeyTerm[];
      /** Key terms the best item does support (what the decline can say it found). */
      found: KeyTerm[];
    };

/** "Which hospitals use…?": the plural noun the question wants named, if it is a key term. */
function namesAskedFor(question: string, keys: KeyTerm[]): KeyTerm | null {
  const match = /^\s*(?:which|what)\s+([a-z]+s)\b/i.exec(question);
  if (!match) return null;
  const term = stem(match[1]!.toLowerCase());
  return keys.find((key) => key.term === term) ?? null;
}

const QUANTITY =
  /^(\d[\d,.]*\+?|one|two|three|four|five|six|seven|eight|nine|ten|dozens?|hundreds?|thousands?|millions?|few|several|many)$/i;

/** Every mention of the term is a count ("40 hospitals", "a few hundred teams"), never a name. */
function onlyCounted(text: string, term: string): boolean {
  const words = text.split(/[^A-Za-z0-9,.+]+/).filter(Boolean);
  let mentions = 0;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!.replace(/[.,]+$/, "").toLowerCase();
    if (stem(word) !== term) continue;
    mentions++;
    const before = [words[i - 1], words[i - 2]].map((w) => (w ?? "").replace(/[.,]+$/, ""));
    if (!before.some((w) => QUANTITY.test(w))) return false;
  }
  return mentions > 0;
}

function typeSatisfied(type: QuestionType, evidence: EvidenceTerms): boolean {
  if (type === "when") return evidence.hasYear;
  if (type === "duration") return evidence.hasYear || evidence.hasNumber;
  if (type === "count") return evidence.hasNumber;
  if (type === "why") return evidence.hasReason;
  return true;
}

/**
 * Groups the chunks by portfolio item and looks for items that support every
 * key term and hold the kind of fact asked for. `itemIds` lists them, best
 * retrieved first.
 */
/** Does the question ask what people say (or who someone is), rather than about the person? */
export function asksAboutPeople(question: string, type = questionType(question)): boolean {
  // Not every "who" question: "Who is Avery's manager?" is about Avery, and a colleague's
  // title must not answer it ("Who is Morgan Ellis?" names the author, which still counts).
  return (
    type === "who_said" ||
    /\b(say|said|says|think|thinks|describe[sd]?|feedback|quotes?|testimonials?|recommend\w*|wrote|colleagues?|references?|praise[sd]?|endorse\w*)\b/i.test(
      question,
    )
  );
}

const AUTHOR_LINE = /^(From|Role|Recommendation from|Their role|Company):/;

/**
 * The evidence an item gives about the person. A testimonial's author line
 * ("Role: Engineering Manager") describes the author, not the person: it
 * counts only for questions about what people say or who someone is, or for
 * questions naming the author.
 */
export function personEvidence(
  content: string,
  question: string,
  ignoredTerms: ReadonlySet<string>,
): string {
  if (!/^(From|Recommendation from):/m.test(content) || asksAboutPeople(question)) return content;
  const authorLines = content.split("\n").filter((line) => AUTHOR_LINE.test(line.trim()));
  const author = evidenceTerms(
    authorLines.filter((line) => /^(From|Recommendation from):/.test(line.trim())).join("\n"),
  );
  if (keyTerms(question, ignoredTerms).some((key) => supports(author, key.term))) return content;
  return content
    .split("\n")
    .filter((line) => !AUTHOR_LINE.test(line.trim()))
    .join("\n");
}

export function checkAnswerability(
  question: string,
  chunks: EvidenceItem[],
  ignoredTerms: ReadonlySet<string> = new Set(),
): Answerability {
  const type = questionType(question);
  const keys = keyTerms(question, ignoredTerms, type);
  const items = new Map<string, string[]>();
  for (const chunk of chunks) {
    const contents = items.get(chunk.itemId) ?? [];
    contents.push(personEvidence(chunk.content, question, ignoredTerms));
    items.set(chunk.itemId, contents);
  }
  let best: { supported: KeyTerm[]; missing: KeyTerm[] } | null = null;
  const itemIds: string[] = [];
  let typeMissing = false;
  let namesMissing: KeyTerm | null = null;
  const named = namesAskedFor(question, keys);
  for (const [itemId, contents] of items) {
    const text = contents.join("\n");
    const evidence = evidenceTerms(text);
    const supported = keys.filter((key) => supports(evidence, key.term));
    const missing = keys.filter((key) => !supports(evidence, key.term));
    if (missing.length === 0) {
      if (named && onlyCounted(text, named.term)) namesMissing = named;
      else if (typeSatisfied(type, evidence)) itemIds.push(itemId);
      else typeMissing = true;
    }
    if (!best || supported.length > best.supported.length) best = { supported, missing };
  }
  if (itemIds.length > 0) return { answerable: true, type, keyTerms: keys, itemIds };
  if (namesMissing)
    return {
      answerable: false,
      reason: "answer_type_not_found",
      type: "names",
      keyTerms: keys,
      missing: [namesMissing],
      found: keys.filter((key) => key !== namesMissing),
    };
  if (!best)
    return {
      answerable: false,
      reason: "entity_not_found",
      type,
      keyTerms: keys,
      missing: keys,
      found: [],
    };
  return {
    answerable: false,
    reason: typeMissing && best.missing.length === 0 ? "answer_type_not_found" : "entity_not_found",
    type,
    keyTerms: keys,
    missing: best.missing,
    found: best.supported,
  };
}
