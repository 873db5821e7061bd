/**
 * Tokenisation shared by retrieval, the lexical embedder and the responders.
 *
 * Unlike the original's token regex (which kept trailing `.`, `-`, `+`, `#`
 * attached, so `work.` was not `work`), punctuation at a token's edges is
 * dropped; only inner joiners survive (`next.js`, `ci/cd`, `c++`, `c#`).
 */

const TOKEN_PATTERN = /[a-z0-9][a-z0-9+#./-]*/g;

/** Lower-cased, punctuation-trimmed word tokens of a text. */
export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  const normalized = text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'");
  for (const match of normalized.matchAll(TOKEN_PATTERN)) {
    let token = match[0];
    // `c++` and `c#` keep their suffix; any other trailing joiner is punctuation.
    if (!/^(c\+\+|c#|f#)$/.test(token)) token = token.replace(/[.\-/+#]+$/, "");
    if (token) tokens.push(token);
  }
  return tokens;
}

export const STOP_WORDS: ReadonlySet<string> = new Set([
  "a",
  "about",
  "all",
  "also",
  "am",
  "an",
  "and",
  "any",
  "are",
  "as",
  "at",
  "be",
  "been",
  "but",
  "by",
  "can",
  "could",
  "did",
  "do",
  "does",
  "for",
  "from",
  "had",
  "has",
  "have",
  "he",
  "her",
  "hers",
  "him",
  "his",
  "how",
  "i",
  "if",
  "in",
  "into",
  "is",
  "it",
  "its",
  "me",
  "more",
  "my",
  "of",
  "on",
  "or",
  "our",
  "she",
  "so",
  "some",
  "tell",
  "than",
  "that",
  "the",
  "their",
  "them",
  "there",
  "they",
  "this",
  "those",
  "to",
  "us",
  "was",
  "we",
  "were",
  "what",
  "when",
  "where",
  "which",
  "who",
  "whom",
  "why",
  "will",
  "with",
  "would",
  "you",
  "your",
  "s",
  "know",
  "please",
  "give",
  "list",
  "show",
]);

const IRREGULAR_STEMS: Record<string, string> = {
  built: "build",
  building: "build",
  builds: "build",
  worked: "work",
  working: "work",
  works: "work",
  led: "lead",
  leading: "lead",
  leads: "lead",
  technologies: "technology",
  testimonials: "testimonial",
  recommendations: "recommendation",
  companies: "company",
  studies: "study",
  studied: "study",
  years: "year",
  skills: "skill",
  projects: "project",
  roles: "role",
  graduated: "graduate",
  grew: "grow",
  ran: "run",
  grown: "grow",
  graduation: "graduate",
  graduating: "graduate",
  recommended: "recommendation",
  recommend: "recommendation",
};

/** A light stemmer: enough to make `projects`/`project` and `built`/`build` meet. */
export function stem(token: string): string {
  const irregular = IRREGULAR_STEMS[token];
  if (irregular) return irregular;
  if (token.length <= 3 || /[^a-z]/.test(token)) return token;
  if (token.endsWith("ies") && token.length > 4) return `${token.slice(0, -3)}y`;
  if (token.endsWith("sses")) return token.slice(0, -2);
  if (token.endsWith("ss") || token.endsWith("us") || token.endsWith("is")) return token;
  if (token.endsWith("s")) return token.slice(0, -1);
  return token;
}

/** Content terms: tokens without stop words or 1-character tokens, stemmed. */
export function contentTerms(text: string): string[] {
  return tokenize(text)
    .filter((token) => token.length > 1 && !STOP_WORDS.has(token))
    .map(stem);
}

/**
 * Synonym groups (the contract's list, stemmed). A query term from a group
 * brings in the whole group, so "stack" meets "technologies".
 */
export const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ["tech", "technology", "stack", "tool", "tooling"],
  ["frontend", "front-end", "react", "next.js", "nextjs", "ui", "tailwind", "css"],
  ["backend", "back-end", "api", "server", "fastapi", "node", "node.js"],
  ["ml", "machine-learning", "ai", "deep-learning", "model", "llm", "rag"],
  ["devops", "ci/cd", "docker", "kubernetes", "deployment", "deploy", "infrastructure"],
  ["job", "role", "position", "employment", "title"],
  ["feedback", "testimonial", "recommendation", "review", "endorsement", "reference"],
  ["project", "portfolio", "product", "app", "build"],
  ["experience", "career", "work", "employer", "history"],
  ["company", "employer", "organization", "organisation", "firm"],
  ["skill", "expertise", "proficiency", "strength"],
  ["education", "degree", "university", "college", "school", "study", "graduate", "thesis"],
  ["contact", "email", "hire", "reach", "touch", "connect"],
  ["current", "currently", "present", "now", "today", "still"],
  ["location", "located", "based", "country", "city", "town", "region"],
];

/**
 * Kinds of technology and well-known members of each, so "testing tools"
 * meets "Vitest" and "databases" meets "PostgreSQL". One-way: a category
 * word brings in its members (a question about Vitest is not about Jest).
 */
export const TECHNOLOGY_CATEGORIES: Readonly<Record<string, readonly string[]>> = {
  testing: [
    "vitest",
    "jest",
    "playwright",
    "cypress",
    "pytest",
    "mocha",
    "selenium",
    "test",
    "a/b",
  ],
  test: ["vitest", "jest", "playwright", "cypress", "pytest", "mocha", "selenium"],
  monitoring: ["grafana", "prometheus", "datadog", "sentry", "vitals", "observability"],
  observability: ["grafana", "prometheus", "datadog", "sentry", "monitoring"],
  database: [
    "postgresql",
    "postgres",
    "mysql",
    "sqlite",
    "d1",
    "mongodb",
    "redis",
    "pgvector",
    "dynamodb",
    "sql",
  ],
  cloud: ["aws", "gcp", "azure", "cloudflare", "vercel", "heroku"],
  frontend: ["react", "next.js", "vue", "angular", "svelte", "css", "tailwind"],
  backend: ["node.js", "fastapi", "hono", "django", "flask", "express", "api"],
  container: ["docker", "kubernetes", "podman"],
  ci: ["github", "actions", "jenkins", "gitlab", "circleci"],
  // Not technologies, but asked the same way: "where is the code" means the GitHub link.
  code: ["github"],
  repo: ["github"],
  repository: ["github"],
  source: ["github"],
};

const GROUP_BY_TERM = new Map<string, readonly string[]>();
for (const group of SYNONYM_GROUPS) for (const term of group) GROUP_BY_TERM.set(term, group);

/** Terms plus every member of each synonym group a term belongs to, and a category's members. */
export function expandTerms(terms: Iterable<string>): Set<string> {
  const expanded = new Set<string>();
  for (const term of terms) {
    expanded.add(term);
    for (const member of GROUP_BY_TERM.get(term) ?? []) expanded.add(member);
    for (const member of TECHNOLOGY_CATEGORIES[term] ?? []) expanded.add(stem(member));
  }
  return expanded;
}

/** The exact-cache key: case, spacing and closing punctuation do not matter. */
export function questionKey(question: string): string {
  return question
    .normalize("NFKC")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/[\s?!.]+$/, "")
    .trim();
}

/**
 * Splits a text into "word plus the whitespace after it" pieces; joining the
 * pieces gives the text back exactly.
 */
export function wordPieces(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}
