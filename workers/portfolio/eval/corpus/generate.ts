/**
 * Expands the training templates (templates.ts) into a labelled corpus:
 * slots × person references × surface variants, plus chat-markup wrappers,
 * injections appended to ordinary questions, and obfuscated copies
 * (leetspeak, letter spacing, homoglyphs, base64, hex, rot13, reversed).
 * Deterministic for a seed. Each example keeps its template family so
 * held-out (dev) figures split by family, never by row.
 */
import {
  ENCODED_LEADS,
  FAMILIES,
  INJECTION_PAYLOADS,
  type Label,
  MARKUP_WRAPPERS,
  NAMES,
  PRONOUN_REFS,
  type TemplateFamily,
} from "./templates.ts";

export interface CorpusExample {
  text: string;
  label: Label;
  language: string;
  family: string;
  form: string;
}

/** mulberry32: small, seedable, good enough for sampling. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LEET_MAP: Record<string, string> = { a: "4", e: "3", i: "1", o: "0", s: "5", t: "7" };
const HOMOGLYPHS: Record<string, string> = {
  a: "а",
  e: "е",
  o: "о",
  p: "р",
  c: "с",
  i: "і",
  x: "х",
  y: "у",
};

export const OBFUSCATIONS: Record<string, (text: string, random: () => number) => string> = {
  leet: (text, random) =>
    text.replace(/[aeiost]/gi, (ch) => (random() < 0.7 ? (LEET_MAP[ch.toLowerCase()] ?? ch) : ch)),
  spacing: (text, random) => {
    const separator = [" ", ".", "-", "_"][Math.floor(random() * 4)]!;
    const gap = separator === " " ? "   " : " ";
    return text
      .split(/\s+/)
      .map((word) => [...word].join(separator))
      .join(gap);
  },
  homoglyph: (text, random) =>
    text.replace(/[aeopcixy]/g, (ch) => (random() < 0.5 ? (HOMOGLYPHS[ch] ?? ch) : ch)),
  base64: (text) => Buffer.from(text, "utf8").toString("base64"),
  hex: (text, random) => {
    const hex = Buffer.from(text, "utf8").toString("hex");
    return random() < 0.3 ? (hex.match(/../g) ?? []).join(" ") : hex;
  },
  rot13: (text) =>
    text.replace(/[a-z]/gi, (ch) => {
      const base = ch <= "Z" ? 65 : 97;
      return String.fromCharCode(((ch.charCodeAt(0) - base + 13) % 26) + base);
    }),
  reversed: (text) => [...text].reverse().join(""),
};

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

function possessive(ref: string): string {
  if (ref === "he") return "his";
  if (ref === "she") return "her";
  if (ref === "they") return "their";
  return ref.endsWith("s") ? `${ref}'` : `${ref}'s`;
}

function surface(text: string, random: () => number): string {
  let out = text;
  const roll = random();
  if (roll < 0.45) out = out.charAt(0).toUpperCase() + out.slice(1);
  else if (roll < 0.5) out = out.toUpperCase();
  if (random() < 0.15) out = out.replace(/[?.!]+$/, "");
  if (random() < 0.08)
    out = `${pick(["hi, ", "hey ", "so ", "ok ", "quick question: ", "hello! "], random)}${out}`;
  return out;
}

function fillPerson(template: string, random: () => number): string {
  const useName = random() < 0.7;
  const ref = useName ? pick(NAMES, random) : pick(PRONOUN_REFS, random);
  return template.replaceAll("{n}", ref).replaceAll("{p}", possessive(ref));
}

/** Expanded texts by template: one template is one family unit for the dev split. */
function expandFamily(
  family: TemplateFamily,
  random: () => number,
  perTemplate: number,
): { template: number; text: string }[] {
  const out = new Set<string>();
  const rows: { template: number; text: string }[] = [];
  const slotNames = Object.keys(family.slots ?? {});
  for (const [templateIndex, template] of family.templates.entries()) {
    let combos = 1;
    for (const slot of slotNames)
      if (template.includes(`{${slot}}`)) combos *= family.slots![slot]!.length;
    const wanted = Math.min(
      perTemplate,
      combos * (template.includes("{n}") || template.includes("{p}") ? 10 : 1),
    );
    for (let attempt = 0; attempt < wanted * 3 && out.size < Number.MAX_SAFE_INTEGER; attempt++) {
      let text = template;
      for (const slot of slotNames)
        text = text.replaceAll(`{${slot}}`, pick(family.slots![slot]!, random));
      text = fillPerson(text, random)
        .replace(/\s+/g, (gap) => (gap.includes("\n") ? gap : " "))
        .trim();
      if (!out.has(text)) rows.push({ template: templateIndex, text });
      out.add(text);
      if (rows.filter((row) => row.template === templateIndex).length >= wanted) break;
    }
  }
  return rows;
}

export function generateCorpus(seed: number): CorpusExample[] {
  const random = seededRandom(seed);
  const examples: CorpusExample[] = [];
  const push = (text: string, label: Label, language: string, family: string, form: string) =>
    examples.push({ text, label, language, family, form });

  const byFamily = new Map<string, string[]>();
  for (const family of FAMILIES) {
    // Big slot families get many samples per template; hand-written multilingual rows get a few variants each.
    const perTemplate = family.slots ? 260 : 6;
    const rows = expandFamily(family, random, perTemplate);
    byFamily.set(
      family.family,
      rows.map((row) => row.text),
    );
    for (const row of rows)
      push(
        surface(row.text, random),
        family.label,
        family.language,
        family.templates.length > 1 ? `${family.family}#${row.template}` : family.family,
        "plain",
      );
  }

  const ordinary = [
    ...(byFamily.get("en-normal-questions") ?? []),
    ...(byFamily.get("en-normal-topics") ?? []),
  ];
  const injections = FAMILIES.filter((f) => f.label === "prompt_override_attempt").flatMap(
    (f) => byFamily.get(f.family) ?? [],
  );

  // Fillers around ordinary questions: on their own they are not off-topic.
  const fillers = [
    "quick question",
    "hi there",
    "hello",
    "thanks a lot",
    "ok so",
    "one more thing",
    "good morning",
    "sorry to bother you",
    "I have a question",
    "just wondering",
    "I'm a recruiter",
    "I'm hiring for a startup",
    "we met at a conference",
    "great, thank you",
    "that's helpful",
    "follow-up question",
    "I was reading the portfolio",
  ];
  for (const filler of fillers) {
    push(filler, "normal_rag", "en", "en-normal-fillers", "plain");
    for (let i = 0; i < 12; i++)
      push(
        `${surface(filler, random)}${pick([". ", "! ", ": ", ", ", " - "], random)}${pick(ordinary, random)}`,
        "normal_rag",
        "en",
        "en-normal-fillers",
        "plain",
      );
  }

  // Word salad and unknown terms: nothing to refuse; retrieval's confidence
  // gate answers that there is no verified information.
  const salad = (
    "zebra quantum marmalade orbit velvet lantern copper meadow pixel harbor cactus nebula " +
    "walnut prism falcon ember tundra violet gizmo quartz maple rocket saffron glacier pebble " +
    "cobalt thistle ripple widget sprocket lagoon tangerine banjo comet vortex basil crimson " +
    "mosaic nimbus otter paprika quiver raven tulip umber vertex willow yonder zephyr " +
    "alpha beta gamma delta foo bar baz qux lorem ipsum dolor amet test testing hello123 xyz"
  ).split(" ");
  for (let i = 0; i < 600; i++) {
    const words = Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(salad, random));
    push(
      surface(`${words.join(" ")}${pick(["", "?", "!", "."], random)}`, random),
      "normal_rag",
      "en",
      "en-normal-salad",
      "plain",
    );
  }

  // Chat markup and smuggled instructions.
  for (const wrapper of MARKUP_WRAPPERS)
    for (let i = 0; i < 24; i++) {
      const text = wrapper
        .replaceAll("{x}", pick(INJECTION_PAYLOADS, random))
        .replaceAll("{q}", surface(pick(ordinary, random), random));
      push(text, "prompt_override_attempt", "en", "en-inj-markup", "markup");
    }
  // An injection riding on an ordinary question, no markup.
  for (let i = 0; i < 500; i++) {
    const joiner = pick(
      [" ", ". Also, ", " and then ", "\n", ". Oh and ", "; by the way ", ". After that, "],
      random,
    );
    const first = surface(pick(ordinary, random), random);
    const second = pick(injections, random);
    push(
      random() < 0.7 ? `${first}${joiner}${second}` : `${surface(second, random)}. ${first}`,
      "prompt_override_attempt",
      "en",
      "en-inj-riding",
      "plain",
    );
  }
  // Multilingual injection riding on English questions (code-switching).
  const foreignInjections = FAMILIES.filter(
    (f) => f.label === "prompt_override_attempt" && f.language !== "en",
  );
  for (let i = 0; i < 300; i++) {
    const family = pick(foreignInjections, random);
    push(
      `${surface(pick(ordinary, random), random)} ${pick(byFamily.get(family.family)!, random)}`,
      "prompt_override_attempt",
      family.language,
      `${family.family}-riding`,
      "plain",
    );
  }

  // Obfuscated copies of attacks (and a share of ordinary questions through the
  // reversible ones, so that odd spelling alone is not read as an attack).
  const attackPools: { label: Label; texts: string[]; family: string }[] = FAMILIES.filter(
    (f) => f.label !== "normal_rag" && f.language === "en",
  ).map((f) => ({ label: f.label, texts: byFamily.get(f.family) ?? [], family: f.family }));
  for (const [form, obfuscate] of Object.entries(OBFUSCATIONS)) {
    const encoded = ["base64", "hex", "rot13", "reversed"].includes(form);
    for (let i = 0; i < 260; i++) {
      const pool = random() < 0.6 ? attackPools[0]! : pick(attackPools, random);
      const source =
        random() < 0.5 && pool.label === "prompt_override_attempt"
          ? pick(INJECTION_PAYLOADS, random)
          : pick(pool.texts, random);
      const hidden = obfuscate(source, random);
      const text = encoded ? `${pick(ENCODED_LEADS, random)}${hidden}` : hidden;
      push(text, pool.label, "en", `${pool.family}-${form}`, form);
    }
    if (!encoded)
      for (let i = 0; i < 60; i++)
        push(
          obfuscate(pick(ordinary, random), random),
          "normal_rag",
          "en",
          `en-normal-${form}`,
          form,
        );
  }
  return examples;
}

/** Families held out of training for the dev figures: a stable hash of the family name. */
export function isDevFamily(family: string): boolean {
  let hash = 7;
  for (let i = 0; i < family.length; i++) hash = (Math.imul(hash, 31) + family.charCodeAt(i)) >>> 0;
  return hash % 7 === 0;
}
