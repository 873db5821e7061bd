/**
 * Private questions by what they ask for: a category of personal data about
 * the owner, whatever the wording. The categories are home address and
 * whereabouts, health, family, finances, government identifiers,
 * credentials, relationships, age and beliefs, and private contact
 * channels. A category word about the owner's *work* ("health records in
 * Signal Canvas", "payment flows", "address autocomplete", "relationships
 * with stakeholders") is not a private question: work nouns next to the
 * word, or the owner building or working on it, make it a work question,
 * and names of the portfolio's entities ("Northwind Health") are removed
 * before the categories are looked for.
 */

import { topicWords } from "./portfolio-vocabulary.ts";

export type PersonalDataCategory =
  | "whereabouts"
  | "health"
  | "family"
  | "finances"
  | "government_id"
  | "credentials"
  | "relationships"
  | "age"
  | "beliefs"
  | "private_contact";

/** Words that make a category word a thing that was built or handled at work. */
const WORK_NOUN = String.raw`(?:apps?|applications?|products?|platforms?|software|tools?|systems?|data|records|checks?|endpoints?|tech|care|industry|sector|domain|companies|company|startups?|features?|flows?|api|apis|dashboards?|integrations?|verification|scanning|reset|management|crm|compliance|clients?|customers?|users?|providers?|engines?|wallets?|pages?|pipelines?|processing|portal|services?|projects?|modules?|forms?|fields?|autocomplete|validation|parsing|benchmarking|planning|calculator|tracker|tracking|reports?|analytics|monitoring|metrics|limit|limiting|groups?|ranges?|team|teams|stakeholders?|community|communities|hygiene|policy|policies|leak|leaks|storage|hashing|manager|vault|rotation|sdk)`;

/** "relationships with stakeholders", "relationship to the maintainers". */
const WORK_RELATIONSHIP =
  /\brelationships? (?:with|to) (?:\w+ ){0,3}(?:stakeholders?|clients?|customers?|colleagues?|coworkers?|co-workers?|managers?|peers?|team|teams|maintainers?|contributors?|community|communities|partners|vendors?|users?|engineers?|developers?|designers?|product|leadership|executives?|recruiters?)\b/;

/** Money in a work sentence: the company's revenue, the project's budget, saving on infrastructure. */
const BUSINESS_MONEY =
  /\b(?:company|companies|business|team|clients?|customers?|infrastructure|cloud|product|project|startup|employer|revenue|conversion|sales|budget|users?|marketplace|platform)\b/;

/** The owner (or the "you" the assistant speaks for) building or handling the thing. */
const WORKED_ON =
  /\b(?:mentors?|mentoring|mentored|coach(?:es|ing|ed)?|stores?|storing|hash|hashes|hashing|encrypts?|encrypting|manages?|managing|rotates?|protects?|protecting|validates?|verif(?:y|ies)|keeps? (?:\w+ ){0,2}out of|built|build|builds|building|worked (?:on|with|in|for)|works (?:on|with|in)|working (?:on|with|in)|implemented|integrated|designed|developed|shipped|handled|handle|handles|dealt with|deal with|secured|secure|experience (?:with|in)|experienced (?:with|in)|know how to|knows how to|familiar with|migrated|automated|optimi[sz]ed)\b/;

const CATEGORY_PATTERNS: [PersonalDataCategory, RegExp][] = [
  [
    "whereabouts",
    /\bwhere (?:does|do|did|is|are|was|will) (?:OWNER) (?:actually |exactly |currently |now )?(?:live|lives|living|stay|stays|staying|sleep|be (?:tonight|today|tomorrow|this weekend|next week|later))\b|\bwhere (?:exactly |actually )?(?:does|do|is) (?:OWNER) (?:live|lives|living|stay|staying)\b|\b(?:live|lives|living|reside|resides|residing) (?:in|at|near|around)?\s?(?:which|what)\b|\b(?:which|what) (?:part of town|neighbou?rhood|street|building|suburb|district|area|city|town|floor|apartment|flat)\b.{0,30}\b(?:live|lives|living|stay|stays|reside|resides|on)\b|\b(?:home|house|apartment|flat|street|postal|mailing) (?:address|postcode|zip|zip code|number|location)\b|\bpostcode\b|\bzip code\b|\bwhereabouts\b|\bwhere (?:is|was) (?:\w+ )?(?:right now|now|at the moment|currently|today|tonight)\b|\bat home\b|\b(?:which|what) (?:gym|cafe|café|bar|pub|restaurant|church|mosque|temple) (?:does|do|did)\b|\bwhere (?:does|do) (?:\w+ ){1,2}(?:usually )?(?:go|hang out|eat|drink|work out|train)\b|\bpart of town\b|\bwhere (?:do|does) (?:\w+ )?(?:parents|family|kids|mother|father|mom|dad) live\b/,
  ],
  [
    "health",
    /\b(?:medical|health|mental health) (?:conditions?|problems?|issues?|history|status|situation)\b|\b(?:illness|illnesses|disease|diseases|sick|sick leave|diagnosis|diagnosed|medication|medications|medicine|meds|therapy|therapist|depression|depressed|anxiety|adhd|autism|autistic|cancer|diabetes|diabetic|pregnant|pregnancy|disability|disabled|surgery|covid|vaccinated|vaccine|allergies|allergic|rehab|addiction|bipolar|ocd|ptsd|in hospital|hospitali[sz]ed|treated for|suffers? from|blood type)\b|\b(?:is|was) (?:\w+ )?(?:ill|unwell|healthy|sick)\b/,
  ],
  [
    "family",
    /\b(?:kids|children|child|son|sons|daughter|daughters|parents|mother|father|mom|mum|dad|siblings?|brothers?|sisters?|grandparents?|grandmother|grandfather|cousins?|maiden name|in-laws?|family|a parent|nephews?|nieces?)\b/,
  ],
  [
    "government_id",
    /\b(?:ssn|social security|passport|national id|id number|id card|identity card|tax id|tax number|nif|nino|driver s license|drivers license|driving licen[cs]e|licen[cs]e number|aadhaa?r|pan card|voter id)\b/,
  ],
  [
    "credentials",
    /\b(?:password|passwords|passcode|pin|login|logins|credentials|access keys?|api keys?|secret keys?|private keys?|tokens?|2fa|backup codes|otp|one-time code|security questions?|recovery codes?|ssh keys?)\b/,
  ],
  [
    "finances",
    /\b(?:net worth|savings|debt|debts|loan|loans|mortgage|rent|rents|credit score|credit card|bank account|which bank|what bank|bank balance|income|salary|salaries|earnings|bonus|wealth|wealthy|rich|tax|taxes|hourly rate|day rate|own a house|owns a house|inheritance|investments|crypto holdings)\b|\bhow much (?:money )?(?:\w+ ){0,3}(?:earn|earns|earned|make|makes|made|get paid|gets paid|got paid|paid|charge|charges|pay|pays)\b|\bhow much money\b|\b(?:earn|earns|make|makes|made|paid|charge|charges) (?:\w+ )?(?:a|an|per|each|every) (?:year|month|hour|day|week)\b|\b(?:is|was|are|were|get|gets|got) (?:\w+ )?(?:well |highly |under|over|poorly |fairly )?paid\b|\bwhat (?:does|did|do) (?:\w+ ){1,2}(?:earn|make|charge)$/,
  ],
  [
    "relationships",
    /\b(?:married|marriage|wife|husband|spouse|partner|girlfriend|boyfriend|fiance|fiancee|dating|date anyone|single|divorced|divorce|relationship|relationships|seeing (?:anyone|someone)|crush|engaged|gay|lesbian|bisexual|sexuality|sexual orientation|love life)\b/,
  ],
  [
    "age",
    /\bhow old (?:is|are|was|were) \w+(?: now| today| currently| this year)?$|\b(?:age|born|birthday|birth date|date of birth|birth year|year of birth)\b/,
  ],
  [
    "beliefs",
    /\b(?:religion|religious|christian|muslim|hindu|jewish|buddhist|atheist|church|pray|prays|vote|votes|voted|voting|political|politics|party does|democrat|republican)\b/,
  ],
  [
    "private_contact",
    /\b(?:personal|private|home|cell|mobile) (?:phone|number|email|e-mail|instagram|facebook|snapchat|tiktok|accounts?)\b|\b(?:whatsapp|snapchat|instagram|facebook|telegram|cell number|mobile number|phone number)\b/,
  ],
];

/** Personal-data words in the other languages the screen reads (folded, accent-free). */
const FOREIGN_CATEGORIES: [PersonalDataCategory, RegExp][] = [
  [
    "whereabouts",
    /\b(?:vive|vives|habite|wohnt|mora|abita|rehta|rehti|rehte)\b|живет|живёт|住在|住んで|يسكن|يعيش|रहते|रहता|रहती/,
  ],
  [
    "health",
    /\b(?:enfermo|enferma|enfermedad|malade|maladie|krank|krankheit|doente|doenca|malato|malata|malattia|bimaar|bimari)\b|болен|больна|болезн|生病|病気|مريض|बीमार/,
  ],
  [
    "family",
    /\b(?:hijos|hijas|enfants|kinder|filhos|filhas|figli|bachche|bacche|bachhe)\b|дети|детей|孩子|子供|子ども|أطفال|اطفال|बच्चे/,
  ],
  [
    "finances",
    /\b(?:salario|sueldo|cobra|gana|salaire|gagne|gehalt|verdient|ganha|stipendio|guadagna|kamata|kamati|kamate|tankhwah)\b|зарплат|зарабатыва|工资|薪水|收入|年収|給料|راتب|يكسب|सैलरी|वेतन|कमाते/,
  ],
  [
    "relationships",
    /\b(?:casado|casada|novia|novio|marie|mariee|verheiratet|sposato|sposata|fidanzata|freundin|shaadi|biwi|girlfriend)\b|женат|замужем|结婚|結婚|متزوج|متزوجة|शादी/,
  ],
];

/** The owner named, referred to, or addressed as "you". */
const OWNER_POINTER = /\b(?:he|she|him|his|her|hers|they|them|their|you|your|yours|u|ur)\b/;

const WORK_AFTER = new RegExp(String.raw`^ (?:\w+ )?${WORK_NOUN}\b`);
const WORK_BEFORE = new RegExp(String.raw`\b${WORK_NOUN} (?:\w+ )?$`);

/** Compiled once per owner (the patterns name the owner) and per entity list. */
const patternsByOwner = new Map<string, [PersonalDataCategory, RegExp][]>();
const phrasesByEntities = new Map<string, string[]>();

function patternsFor(ownerTokens: ReadonlySet<string>): [PersonalDataCategory, RegExp][] {
  const owner = [...ownerTokens, "he", "she", "they", "you", "u"].join("|");
  let patterns = patternsByOwner.get(owner);
  if (!patterns) {
    patterns = [...CATEGORY_PATTERNS, ...FOREIGN_CATEGORIES].map(([category, template]) => [
      category,
      template.source.includes("OWNER")
        ? new RegExp(template.source.replaceAll("OWNER", owner))
        : template,
    ]);
    patternsByOwner.set(owner, patterns);
  }
  return patterns;
}

function phrasesFor(entities: readonly string[]): string[] {
  const key = entities.join("\u0000");
  let phrases = phrasesByEntities.get(key);
  if (!phrases) {
    phrases = entities
      .map((entity) => topicWords(entity))
      .filter((words) => words.length > 0)
      .map((words) => ` ${words.join(" ")} `);
    if (phrasesByEntities.size > 32) phrasesByEntities.clear();
    phrasesByEntities.set(key, phrases);
  }
  return phrases;
}

function stripEntities(text: string, entities: readonly string[]): string {
  let stripped = text;
  for (const phrase of phrasesFor(entities)) stripped = stripped.replaceAll(phrase, " entity ");
  return stripped;
}

export interface PersonalDataReading {
  category: PersonalDataCategory;
}

/**
 * The personal-data category a question asks about the owner, or null.
 * `ownerTokens` are the owner's name words (folded); `entities` the
 * portfolio's entity names, removed before the categories are looked for.
 */
export function personalDataAsked(
  question: string,
  ownerTokens: ReadonlySet<string>,
  entities: readonly string[],
  words: string[] = topicWords(question),
): PersonalDataReading | null {
  const joined = words.join(" ");
  const aboutOwner = words.some((word) => ownerTokens.has(word)) || OWNER_POINTER.test(joined);
  if (!aboutOwner) return null;
  const plain = stripEntities(` ${joined} `, entities).trim();
  for (const [category, pattern] of patternsFor(ownerTokens)) {
    const match = pattern.exec(plain);
    if (!match) continue;
    const after = plain.slice(match.index + match[0].length);
    const before = plain.slice(0, match.index);
    // "health records", "payment flows", "password reset": a thing at work.
    if (WORK_AFTER.test(after)) continue;
    if (WORK_BEFORE.test(before) && category !== "finances") continue;
    if (WORKED_ON.test(plain)) continue;
    if (category === "relationships" && WORK_RELATIONSHIP.test(plain)) continue;
    if (category === "finances" && BUSINESS_MONEY.test(plain)) continue;
    return { category };
  }
  return null;
}
