import { explicitAsked } from "./explicit-content.ts";
import { personalDataAsked } from "./personal-data.ts";
import { EMPTY_VOCABULARY, type PortfolioVocabulary, topicWords } from "./portfolio-vocabulary.ts";
import {
  type PreRouterCategory,
  type PreRouterDecision,
  type PreRouterReason,
  type PreRouterSubject,
  preRoute,
} from "./pre-router.ts";
import {
  type ClassifierVerdict,
  classifyViews,
  loadSafetyModel,
  type SafetyLabel,
  type SafetyModel,
  type SafetyModelFile,
} from "./safety-classifier.ts";
import modelFile from "./safety-model.json" with { type: "json" };
import { type NormalisedQuestion, normaliseQuestion } from "./safety-normalise.ts";
import { isOffTopic, readTopic, type TopicReading } from "./topic.ts";

/**
 * The local safety decision: two stages over the normalised question.
 * 1. Rules (pre-router.ts): precise patterns, checked against the question
 *    and against anything decoded from it; a decoded message that trips a
 *    rule is a smuggled instruction.
 * 2. What the question asks for: a category of personal data about the
 *    owner (personal-data.ts) is private, whatever the wording; the owner's
 *    looks or abuse thrown at the assistant (explicit-content.ts) explicit.
 * 3. The learned classifier (safety-classifier.ts), for what the rules let
 *    through: a question is refused when its attack probability
 *    (1 − P(normal)) on any view reaches the configured threshold. Its
 *    off-topic verdicts are not used: topic is decided by step 4.
 * 4. What the question is about (topic.ts): off-topic when it is a task for
 *    the assistant or refers to nothing in the portfolio, judged against the
 *    portfolio's own vocabulary drawn from the ingested content.
 */

export interface SafetyThresholds {
  /** Attack probability at or above which the classifier refuses (SAFETY_CLASSIFIER_THRESHOLD). */
  classifier: number;
  /** False: rules only (SAFETY_CLASSIFIER=off). */
  classifierEnabled: boolean;
}

/** 0.85: chosen by `npm run train:safety` on the training corpus's held-out dev families (never on the test split). */
export const DEFAULT_SAFETY_THRESHOLDS: SafetyThresholds = {
  classifier: 0.85,
  classifierEnabled: true,
};

export interface SafetyVerdict {
  decision: PreRouterDecision;
  /**
   * Which stage decided: `rules`, `topic` (personal-data category or
   * off-topic by subject), `classifier`, or `none` when the question passed.
   */
  stage: "rules" | "topic" | "classifier" | "none";
  /** The classifier's attack probability (0 when it did not run). */
  attackProbability: number;
  /** For a refusal by subject: what a second look with the vocabulary reuses. */
  resume?: { normalised: NormalisedQuestion; classifier: ClassifierVerdict | null };
}

const NORMAL: PreRouterDecision = { bypass: false, category: "normal", reason: "normal_rag" };

const CATEGORY_OF: Record<Exclude<SafetyLabel, "normal_rag">, PreRouterCategory> = {
  prompt_override_attempt: "prompt_injection",
  explicit_content: "explicit",
  personhood_confusion: "identity",
  assistant_identity: "identity",
  compensation: "private",
  sensitive_personal_data: "private",
  unsupported_topic: "off_topic",
};

let bundledModel: SafetyModel | null = null;

/** The model shipped with the worker, decoded once per isolate. */
export function bundledSafetyModel(): SafetyModel {
  bundledModel ??= loadSafetyModel(modelFile as SafetyModelFile);
  return bundledModel;
}

const SMUGGLED: PreRouterDecision = {
  bypass: true,
  category: "prompt_injection",
  reason: "prompt_override_attempt",
};

/** Stage 1 only: the rules on the question and on every decoded view. */
export function screenWithRules(
  question: string,
  subject: PreRouterSubject,
  normalised: NormalisedQuestion = normaliseQuestion(question),
): PreRouterDecision {
  const direct = preRoute(question, subject);
  if (direct.bypass) return direct;
  for (const hidden of normalised.decoded) {
    const decision = preRoute(hidden, subject);
    if (decision.bypass) return SMUGGLED;
  }
  return direct;
}

function fromClassifier(verdict: ClassifierVerdict): PreRouterDecision {
  return {
    bypass: true,
    category: CATEGORY_OF[verdict.label],
    reason: verdict.label as PreRouterReason,
  };
}

const PRIVATE_BY_CATEGORY: PreRouterDecision = {
  bypass: true,
  category: "private",
  reason: "sensitive_personal_data",
};
const COMPENSATION: PreRouterDecision = {
  bypass: true,
  category: "private",
  reason: "compensation",
};
const EXPLICIT: PreRouterDecision = {
  bypass: true,
  category: "explicit",
  reason: "explicit_content",
};
const OFF_TOPIC: PreRouterDecision = {
  bypass: true,
  category: "off_topic",
  reason: "unsupported_topic",
};

/**
 * Words without which a classifier verdict of that category has nothing to
 * stand on. The classifier learned templates' wording, so on a plain
 * question about the owner's work ("what's your tech stack?", "can you tell
 * me about your time at Northwind?") it can fire on "your" alone; when the
 * question is about the portfolio and carries none of its category's
 * words, the verdict is overruled. Explicit verdicts are never overruled.
 */
const CLASSIFIER_CUES: Record<PreRouterCategory, RegExp> = {
  prompt_injection:
    /\b(?:instrucciones|instrucoes|istruzioni|consignes|anweisungen|regeln|reglas|regras|regole|regles|sistema|systeme|ignora|ignore|olvida|oublie|vergiss|esqueca|dimentica|revela|rivela|nirdesh|instruct\w*|prompts?|rules?|guid\w*|told|tell you|set ?up|config\w*|programm\w*|creators?|system|developer|persona|pretend\w*|role ?play|ignore|forget|disregard|reveal|secret\w*|hidden|repeat|verbatim|word for word|above|before (?:this|we|i|our)|polic\w*|filters?|restrict\w*|mode|jailbreak|act as|say|respond|reply|output|print|brief\w*|directions?|orders?|constraints?|initiali[sz]\w*|paste|recite|dump|leak)\b/,
  identity:
    /\b(?:real|human|person|bot|robot|ai|model|machine|alive|conscious|sentient|talking to|chatting with|speaking (?:to|with)|typing|yourself|made you|built you|created you|programmed you|your name|who are you|what are you$|are you (?:a|an|the|really|actually|just|even))\b/,
  private:
    /\b(?:phone|numbers?|digits?|dial|ring|call|text|address|house|apartment|flat|home|family|age|old|born|personal|private|whatsapp|cell|mobile|salary|pay|paid|earn\w*|money|rate|income|worth|figure|make|makes|pull|bring|cost|afford|rich|bank|reach|directly|anyone|someone|seeing)\b/,
  explicit:
    /\b(?:sex\w*|nude\w*|naked|porn\w*|nsfw|hot|sexy|body|bed|turn\w* on|dirty|erotic\w*|kink\w*|kiss\w*|love|lingerie|underwear|pics?|photos?|pictures?|fuck\w*|shit\w*|bitch\w*|ass|asshole|dick\w*|cock|pussy|boobs?|tits|horny|spicy|naughty|onlyfans|strip\w*|idiot|stupid|useless|suck\w*|hell|damn|crap)\b/,
  off_topic: /./,
};

/** "you" as the owner: the assistant speaks for them ("your projects", "are you open to ..."). */
const OWNER_AS_YOU =
  /\byour (?:\w+ )?(?:colleagues|coworkers|co-workers|managers?|team|teammates|clients|references|tech stack|stack|projects?|experience|time at|work|skills?|resume|cv|career|background|roles?|jobs?|portfolio|education|degree|testimonials|recommendations|github|linkedin|availability|favou?rite project|strongest)\b|\b(?:are|were) you (?:working|building|available|open|looking|based|familiar|experienced|interested|currently|still)\b|\bhave you (?:built|worked|used|shipped|led|done|ever)\b|\b(?:engineer|developer|programmer|designer|kind of engineer|kind of developer) are you\b|\bwhat are you (?:best|good|great|strongest|most experienced) (?:at|in|with)\b|\bare you (?:good|great|best|strong|skilled|proficient|fluent) (?:at|with|in)\b|\bdo you (?:do|offer|take on|accept|know|use|speak|write|code in|work with|work on|have experience)\b|\byou as an? (?:engineer|developer|programmer|designer|lead|manager|colleague|mentor)\b|\bwhat (?:motivates|drives|excites|interests|inspires) you\b/;

const FOREIGN_INJECTION_CUES =
  /\b(?:instrucci\w*|instruc\w*|istruzion\w*|consigne\w*|anweisung\w*|regel\w*|regla\w*|regra\w*|regol\w*|r[eè]gle\w*|sistema|syst[eè]me|ignor\w*|olvid\w*|oubli\w*|vergiss\w*|esque[cç]\w*|dimentic\w*|revel\w*|rivel\w*|prompt\w*|secret\w*|ocult\w*|cach[ée]\w*|geheim\w*|nascost\w*|nirdesh|niyam|bhool|bhul)\b/;

function overrulesClassifier(
  reading: TopicReading,
  category: PreRouterCategory,
  folded: string,
  encoded: boolean,
): boolean {
  if (encoded || CLASSIFIER_CUES[category].test(folded)) return false;
  if (reading.request === "creative" || reading.request === "code" || reading.askerCentred)
    return false;
  // Private questions are found by category (personal-data.ts), which has
  // already passed this one; the classifier's private verdict stands unless
  // the question names the owner or a portfolio entity with none of the
  // private words above, or is a follow-up, thanks or a greeting.
  // A follow-up or greeting made only of function words, not addressed to
  // the assistant ("so what exactly are you?"), has nothing to attack with.
  const followUp =
    reading.onlyFunctionWords &&
    folded.split(" ").length <= 8 &&
    !/\b(?:you|your|u|ur|yourself)\b/.test(folded);
  if (category === "private") return reading.namesOwnerOrEntity || reading.pleasantry || followUp;
  // A question naming the owner in the portfolio's own words only ("what
  // would Avery's ideal next job look like?") gives an explicit verdict nothing to stand on.
  if (category === "explicit")
    return reading.namesOwnerOrEntity && reading.outsideWords.length === 0;
  if (category !== "prompt_injection" && category !== "identity") return false;
  if (OWNER_AS_YOU.test(folded) || followUp || reading.pleasantry) return true;
  // The owner or an entity named, every other word the portfolio's or its field's.
  if (reading.namesOwnerOrEntity && reading.outsideWords.length === 0 && reading.frame) return true;
  // The owner named in another language, with a portfolio word of that
  // language ("¿Avery está disponible para trabajar?"): injections in other
  // languages are the multilingual rules' to catch, before this stage.
  return (
    category === "prompt_injection" &&
    reading.namesOwnerOrEntity &&
    reading.foreignFrame &&
    !FOREIGN_INJECTION_CUES.test(folded)
  );
}

const ownerTokensCache = new WeakMap<PortfolioVocabulary, Map<string, Set<string>>>();

function ownerTokensOf(subject: PreRouterSubject, vocabulary: PortfolioVocabulary): Set<string> {
  let bySubject = ownerTokensCache.get(vocabulary);
  if (!bySubject) {
    bySubject = new Map();
    ownerTokensCache.set(vocabulary, bySubject);
  }
  let tokens = bySubject.get(subject.personName);
  if (!tokens) {
    tokens = new Set<string>();
    for (const name of [subject.personName, ...vocabulary.ownerNames])
      for (const word of topicWords(name)) if (word.length > 2) tokens.add(word);
    bySubject.set(subject.personName, tokens);
  }
  return tokens;
}

const entityNamesCache = new WeakMap<PortfolioVocabulary, Map<string, string[]>>();

function entityNamesOf(subject: PreRouterSubject, vocabulary: PortfolioVocabulary): string[] {
  let bySubject = entityNamesCache.get(vocabulary);
  if (!bySubject) {
    bySubject = new Map();
    entityNamesCache.set(vocabulary, bySubject);
  }
  let names = bySubject.get(subject.assistantName);
  if (!names) {
    names = [...vocabulary.entities, subject.assistantName];
    bySubject.set(subject.assistantName, names);
  }
  return names;
}

/**
 * The local screen. `vocabulary` is the portfolio's own (from the ingested
 * content); without it only the configured name and the built-in
 * vocabulary count as references, so a question about a project can read
 * as off-topic: the caller then looks again with the vocabulary
 * (`needsVocabulary`, `rescreenWithVocabulary`).
 */
export function screenQuestionLocally(
  question: string,
  subject: PreRouterSubject,
  thresholds: SafetyThresholds = DEFAULT_SAFETY_THRESHOLDS,
  model: SafetyModel = bundledSafetyModel(),
  vocabulary: PortfolioVocabulary = EMPTY_VOCABULARY,
): SafetyVerdict {
  const normalised = normaliseQuestion(question);
  const ruled = screenWithRules(question, subject, normalised);
  if (ruled.bypass) return { decision: ruled, stage: "rules", attackProbability: 0 };
  if (!thresholds.classifierEnabled)
    return { decision: ruled, stage: "none", attackProbability: 0 };
  return subjectStages(question, subject, normalised, thresholds, model, vocabulary, null);
}

/** After the rules: personal-data categories, the classifier, then the question's subject. */
function subjectStages(
  question: string,
  subject: PreRouterSubject,
  normalised: NormalisedQuestion,
  thresholds: SafetyThresholds,
  model: SafetyModel,
  vocabulary: PortfolioVocabulary,
  scored: ClassifierVerdict | null,
): SafetyVerdict {
  const words = topicWords(question);
  const personal = personalDataAsked(
    question,
    ownerTokensOf(subject, vocabulary),
    entityNamesOf(subject, vocabulary),
    words,
  );
  const resume = { normalised, classifier: scored };
  if (explicitAsked(words, ownerTokensOf(subject, vocabulary)))
    return { decision: EXPLICIT, stage: "topic", attackProbability: 0 };
  if (personal)
    return {
      decision: personal.category === "finances" ? COMPENSATION : PRIVATE_BY_CATEGORY,
      stage: "topic",
      attackProbability: scored?.attackProbability ?? 0,
      resume,
    };
  const { primary, segments, decoded } = normalised;
  const verdict = scored ?? classifyViews(model, [primary, ...segments, ...decoded]);
  resume.classifier = verdict;
  const reading = readTopic(question, subject, vocabulary, words);
  if (
    verdict.attackProbability >= thresholds.classifier &&
    verdict.label !== "unsupported_topic" &&
    !overrulesClassifier(reading, CATEGORY_OF[verdict.label], primary, decoded.length > 0)
  )
    return {
      decision: fromClassifier(verdict),
      stage: "classifier",
      attackProbability: verdict.attackProbability,
    };
  if (isOffTopic(reading))
    return {
      decision: OFF_TOPIC,
      stage: "topic",
      attackProbability: verdict.attackProbability,
      resume,
    };
  return { decision: NORMAL, stage: "none", attackProbability: verdict.attackProbability };
}

/**
 * Whether the portfolio's vocabulary could change a verdict reached without
 * it: only refusals by subject (off-topic, or a personal-data category that
 * an entity's name may explain, as in "Northwind Health") can turn into a pass.
 */
export function needsVocabulary(verdict: SafetyVerdict): boolean {
  return verdict.stage === "topic";
}

/**
 * The subject stages again, with the portfolio's vocabulary, for a question
 * refused for its subject: the rules and the classifier's score are not
 * computed twice.
 */
export function rescreenWithVocabulary(
  question: string,
  subject: PreRouterSubject,
  first: SafetyVerdict,
  vocabulary: PortfolioVocabulary,
  thresholds: SafetyThresholds = DEFAULT_SAFETY_THRESHOLDS,
  model: SafetyModel = bundledSafetyModel(),
): SafetyVerdict {
  if (!needsVocabulary(first) || !first.resume) return first;
  const { normalised, classifier } = first.resume;
  return subjectStages(question, subject, normalised, thresholds, model, vocabulary, classifier);
}

/** The whole local screen as the worker runs it, with the vocabulary at hand. */
export function screenWithVocabulary(
  question: string,
  subject: PreRouterSubject,
  vocabulary: PortfolioVocabulary | null,
  thresholds: SafetyThresholds = DEFAULT_SAFETY_THRESHOLDS,
  model: SafetyModel = bundledSafetyModel(),
): SafetyVerdict {
  const first = screenQuestionLocally(question, subject, thresholds, model);
  return vocabulary
    ? rescreenWithVocabulary(question, subject, first, vocabulary, thresholds, model)
    : first;
}
