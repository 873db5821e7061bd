/**
 * What a question is about, for the safety screen's off-topic decision.
 *
 * A question the portfolio can answer is about its owner or the owner's
 * work, projects, skills, writing or contact for work. So instead of
 * listing outside topics (weather, sport, recipes, ...), the screen asks:
 * - does the question refer to the owner (name, he/she/they, "the
 *   candidate"), to something that belongs to the portfolio (a project,
 *   employer, school or recommender named in the ingested content), to the
 *   portfolio's vocabulary (projects, experience, skills, resume, hire,
 *   contact, ...), or to the owner through "you" ("what's your stack")?
 * - is it a task for the assistant instead (write a poem, fix my code,
 *   convert a currency, plan a trip) or advice for the asker ("how do I",
 *   "my resume")?
 * - does it ask what something in the world is ("what is the capital of",
 *   "explain TCP"), or use words neither the portfolio nor its field uses?
 * A creative or coding task is off-topic even when it names the owner; a
 * task or a question that refers to nothing in the portfolio is off-topic;
 * short follow-ups ("why?", "and before that?") and greetings pass.
 *
 * The owner's entities and words come from the ingested content
 * (portfolio-vocabulary.ts), so a new project is in scope once ingested.
 */

import { type PortfolioVocabulary, topicWords } from "./portfolio-vocabulary.ts";
import type { PreRouterSubject } from "./pre-router.ts";

/** A light, symmetric stemmer: dictionary words and question words go through the same folding. */
export function baseForm(word: string): string {
  if (word.length <= 3 || /[^a-z]/.test(word)) return word;
  if (word.endsWith("ies") && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith("ing") && word.length > 5) return word.slice(0, -3);
  if (word.endsWith("ed") && word.length > 4) return word.slice(0, -2);
  if (word.endsWith("es") && /(?:ch|sh|x|ss)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("s") && !/(?:ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

const set = (text: string) => new Set(text.trim().split(/\s+/).map(baseForm));

/** Words that carry no topic: function words, question words, generic verbs and adjectives, greetings. */
const FUNCTION_WORDS = set(`
a an the and or but nor so yet if then than as at by for from in into of off on onto out over to up
with without within about above after again against all also am any are aren't around because before
being below between both can cannot could couldn did didn do does doesn doing done don down during each
either else even ever every few further had hadn has hasn have haven having here how however just least
less let lot lots many may maybe me might mine more most much must my myself near neither next no not now
nothing of often once one only other others otherwise our ours ourselves own per perhaps please quite
rather really same several shall should shouldn since some somebody someone something sometimes somewhat
soon still such sure than that that's the their theirs them themselves there these they thing things
this those though through thus till to too toward towards under until upon us very via was wasn we well
were weren what whatever when whenever where whereas wherever whether which while who whoever whom whose
why will with won would wouldn yes yet you your yours yourself yourselves i i'm im i'd i've it its it's
is be been s t d ll ve re m o u ur he she him her his hers they them their he's she's its
tell told say said says give gave show shown know knew known think thought want wanted need needed like
liked get got getting go going went gone come came make made take took see seen look looking find found
use used using try tried mean meant kind sort type way bit part example examples detail details
good great best better nice cool interesting important main big biggest small new old last first second
third latest recent recently currently today now ago year years month months time times day days
ok okay hi hello hey hiya thanks thank cheers bye goodbye morning evening afternoon welcome sorry great
awesome wow yeah yep nope hmm um well right so anyway actually basically exactly roughly briefly quick
quickly short long tl dr summary overview summarise summarize list describe explain elaborate detail
more else anything everything stuff further go on continue results result happen happened
outcome outcomes reason reasons story stories challenge challenges lesson lessons problem problems
status progress point takeaway takeaways highlight highlights worth knowing know aware hear yo sup
hiya heya ideal fine true false happy glad mind wonder wondering curious people folks
`);

/**
 * Words only a portfolio question uses: they make a question about the
 * portfolio even in the shape of a general question ("is there a resume?").
 */
const PORTFOLIO_NOUNS = set(`
portfolio resume cv bio testimonial testimonials recommendation recommendations endorsement
endorsements reference references linkedin github gitlab repo repository repositories demo thesis
availability candidate
`);

/**
 * The portfolio's vocabulary: words pointing at the owner's professional
 * profile, unless the question is a general one (advice, a definition, a
 * task) that merely mentions them.
 */
const FRAME_WORDS = set(`
project projects experience experienced skill skills skillset expertise strength strengths
weakness weaknesses background career hire hiring contact reach email website site link links
colleague colleagues coworker coworkers employer employers freelance freelancer freelancing contract
contractor available relocate relocation remote onsite on-site based timezone education degree
studied university college school achievement achievements accomplishment accomplishments led
mentor mentored mentoring contribution contributions contributed open-source source code stack
specialise specialize specialty specialization passionate proud seniority side hobby hobbies
opportunity opportunities open gig gigs
`);

/** Career words shared by general questions ("a job interview", "a senior engineer"): known, not references. */
const CAREER_WORDS = set(`
job jobs role roles position positions title recruit recruiter recruiting interview manager managers
team teams work worked working works company companies client clients consulting consultant office
study course certification certifications certified award awards lead leading publication
publications article articles blog talk talks conference speak speaks spoken language languages tech
technology technologies tool tools tooling framework frameworks focus passion impact senior junior
staff principal engineer engineering developer development programmer programming fit suitable
interest interests goal goals motivation looking
`);

/** The field's words: not references to the owner by themselves, but never outside the portfolio's field. */
const DOMAIN_WORDS = set(`
built build building shipped ship wrote written writing
software app apps application applications api apis backend back-end frontend front-end full-stack
fullstack web mobile ios android cloud data database databases sql nosql server servers serverless
infrastructure devops ci cd pipeline pipelines deploy deployment deployed test tests testing
performance scalability architecture design designer designs system systems product products feature
features ui ux user users customer customers startup start-up scale-up enterprise agile scrum sprint
code coding program microservice microservices monolith security authentication auth login password
passwords oauth sso api-key token tokens encryption privacy gdpr hipaa compliance pci payment payments
billing checkout ecommerce e-commerce marketplace fintech healthtech healthcare health clinical
hospital hospitals patient patients medical analytics dashboard dashboards metric metrics monitoring
observability logging ingestion etl ml ai llm llms rag embeddings vector machine learning model models
chatbot chatbots bot assistant prompt prompts injection guard safety moderation content cms
accessibility a11y i18n localisation localization internationalization seo load speed latency
conversion revenue cost costs budget pricing subscription invoice invoicing tax wallet crypto
blockchain logistics shipping delivery cli clis command-line library libraries package packages sdk
framework open source integration integrations migration migrations refactor refactoring legacy
review reviews pull request requests commit git version versions release releases incident
incidents on-call production debugging debug optimisation optimization efficient efficiency
react next.js nextjs vue angular svelte typescript javascript js ts node node.js nodejs deno bun
python django flask fastapi java kotlin scala go golang rust ruby rails php laravel c c++ c# .net
dotnet swift objective-c dart flutter elixir erlang haskell clojure r matlab julia perl lua bash shell
html css sass scss tailwind bootstrap graphql rest grpc websocket websockets hono express nest nestjs
postgresql postgres mysql sqlite mariadb mongodb redis dynamodb cassandra elasticsearch opensearch
kafka rabbitmq sqs kinesis spark airflow dbt snowflake bigquery redshift pandas numpy pytorch
tensorflow scikit-learn sklearn keras pgvector vectorize d1 aws gcp azure cloudflare workers vercel
netlify heroku docker kubernetes k8s terraform ansible helm nginx linux unix github-actions actions
jenkins circleci gitlab-ci vitest jest playwright cypress selenium pytest mocha storybook webpack vite
esbuild rollup babel grafana prometheus datadog sentry stripe twilio figma jira notion slack
openai anthropic llama langchain huggingface
`);

const PRONOUN_REFERENCES = new Set([
  "he",
  "she",
  "him",
  "his",
  "her",
  "hers",
  "they",
  "them",
  "their",
  "theirs",
]);
const SECOND_PERSON = new Set(["you", "your", "yours", "yourself", "u", "ur"]);

/** The owner or the portfolio named without a name. */
const DESCRIBED_OWNER =
  /\b(?:the|this|that) (?:candidate|person|guy|developer|engineer|owner|author|applicant|portfolio|site|website|page|chat ?bot|bot|assistant)\b|\bportfolio owner\b|\bhere\b/;

/** Asking how to get in touch or see the owner's material. */
const CONTACT_INTENT =
  /\b(?:contact|reach out|reach|get in touch|hire|hiring|email|message|book a call|schedule (?:a call|an interview)|connect with|talk (?:to|with) (?:avery|him|her|them))\b/;
const ACCESS_INTENT = /\b(?:see|find|view|read|download|get|access|open|check out|look at)\b/;

/** "Can you / please / help me" + a verb at the start: a request addressed to the assistant. */
const REQUEST =
  /^(?:(?:hey|hi|hello|ok|okay|so|and|now|yo|pls|please|quick question)[,!:]? )*(?:(?:can|could|would|will) (?:you|u) (?:please |pls |just |quickly )?|please |pls |i (?:want|need|would like|d like) (?:you to )?|help me (?:to )?|let s |i m looking for )?(?:write|compose|draft|generate|create|make|give|tell|suggest|recommend|plan|book|order|translate|convert|calculate|compute|solve|fix|debug|review|proofread|summari[sz]e|explain|rank|find|name|come up with|help|teach|sing|code|implement|rewrite|edit|correct|check|design|teach|predict|guess)\b/;
const HELP_ME = /\bhelp me\b|\b(?:can|could|would|will) (?:you|u) (?:please )?help\b/;

/** What creative and chore requests ask for. */
const CREATIVE_OBJECT =
  /\b(?:poem|poems|poetry|haiku|limerick|sonnet|story|stories|joke|jokes|riddle|riddles|song|songs|lyrics|rap|essay|speech|toast|cover letter|letter|email to|text to|breakup text|tweet|caption|slogan|logo|baby names|names for|quote|fun fact|playlist|recipe|recipes|itinerary|workout|shopping list|packing list|to-do list|gift|homework|bedtime|novel|movie|movies|book|books|podcast|podcasts|table for|pun|puns|trivia)\b/;
const CODE_TASK =
  /\b(?:write|generate|create|fix|debug|implement|code|rewrite|refactor|optimi[sz]e|correct|review)\b.{0,40}\b(?:function|script|program|code|query|regex|snippet|class|algorithm|component|sql|html|css|bug|error|exception|app|linked list|loop)\b|\b(?:fix|debug|solve) (?:this|my)\b/;

/** The asker's own situation: "how do I", "should I", "my ...". */
const ASKER_CENTRED =
  /\b(?:my|mine|myself)\b|\b(?:how|what|which|where|when|why) (?:do|should|can|could|would|shall|must|might) i\b|^(?:\w+ )?(?:should|shall|do) i\b|\bi (?:want|need|am trying|m trying|plan|have to) to\b/;

/** Asking what something in the world is. */
const DEFINITIONAL =
  /^(?:(?:so|and|ok|okay|hey|hi|quick question)[,:]? )*(?:what(?: is| are| was| were| s| does| do| the)|who (?:is|was|are|won|invented|wrote|painted|made|discovered|owns|directed|sang|founded)|when (?:is|was|does|did|will)|why (?:is|are|do|does|did)|how (?:does|do|is|are|many|much|long|tall|far|old|big|hot|cold|to)|explain|define|is (?:it|there|a|an|the)|are (?:there|the)|which (?:is|are|one is))\b|\bdifference between\b|\b(?:vs|versus)\b|\b(?:better|worse|faster|slower|easier|harder|cheaper|safer) than\b|\bworth it\b|\bmeaning of\b/;

/** Pointing back at the previous answer ("and how many people were on that team?"). */
const ANAPHORA = /\b(?:that|this|those|these|there|then)\b/;

/** General advice, not about anyone in particular ("any tips for", "should a developer", "the best way to learn"). */
const ADVICE =
  /\b(?:tips?|advice|ideas?) (?:for|on|about)\b|\bany tips\b|\bbest (?:way|ways|place|places|time|practices?) (?:to|for)\b|\bshould (?:a|an|one|someone|people|developers?|engineers?|beginners?|juniors?|we)\b|\bhow (?:can|do|should|would) (?:a|an|one|someone|people|beginners?|juniors?)\b|\bworth (?:it|moving|learning|buying|switching)\b|\b(?:cheapest|easiest|fastest|best) (?:\w+ ){0,2}(?:for|to)\b/;
const PLEASANTRY =
  /^(?:ok |okay |great |cool |nice |perfect |awesome |wow |brilliant )?(?:thanks|thank you|thx|ty|many thanks|appreciate(?: it| that)?|cheers|much appreciated|got it|hi|hello|hey|hiya|good (?:morning|afternoon|evening|night)|bye|goodbye|see you|have a good)\b/;

export interface TopicReading {
  /** A portfolio word (projects, experience, hire, ...) in the question. */
  frame: boolean;
  /** A portfolio word in one of the other languages the screen reads ("trabajar", "项目"). */
  foreignFrame: boolean;
  /** A word only portfolio questions use (resume, testimonials, ...), or the portfolio named. */
  portfolioNoun: boolean;
  /** General advice ("any tips for", "the best way to learn"). */
  advice: boolean;
  /** "you" stands for the owner: asked about their work, not asked to do a chore. */
  ownerAsYou: boolean;
  /** Content words other than portfolio words (a technology, an outside word). */
  subjectBeyondFrame: boolean;
  /** Thanks, a greeting or goodbye, not a question ("thanks so much, this was useful"). */
  pleasantry: boolean;
  /** Every word is a function word: a follow-up or a greeting ("and after that?", "thanks!"). */
  onlyFunctionWords: boolean;
  /** Names the owner, a portfolio entity, the portfolio itself or the assistant as its voice. */
  aboutPortfolio: boolean;
  /** Names the owner or one of the portfolio's entities (stronger than vocabulary alone). */
  namesOwnerOrEntity: boolean;
  request: "creative" | "code" | "task" | null;
  askerCentred: boolean;
  definitional: boolean;
  /** Words neither the portfolio nor its field uses. */
  outsideWords: string[];
}

interface CompiledVocabulary {
  ownerTokens: Set<string>;
  entityPhrases: string[];
  entityTokens: Set<string>;
  known: Set<string>;
}

const compiled = new WeakMap<PortfolioVocabulary, Map<string, CompiledVocabulary>>();

function compile(subject: PreRouterSubject, vocabulary: PortfolioVocabulary): CompiledVocabulary {
  const key = `${subject.personName}\u0000${subject.assistantName}`;
  let bySubject = compiled.get(vocabulary);
  const cached = bySubject?.get(key);
  if (cached) return cached;
  const ownerTokens = new Set<string>();
  for (const name of [subject.personName, ...vocabulary.ownerNames])
    for (const word of topicWords(name)) if (word.length > 2) ownerTokens.add(word);
  const entityPhrases: string[] = [];
  const entityTokens = new Set<string>();
  for (const entity of [...vocabulary.entities, subject.assistantName]) {
    const words = topicWords(entity);
    if (words.length === 0) continue;
    entityPhrases.push(` ${words.join(" ")} `);
    for (const word of words) {
      const base = baseForm(word);
      // A distinctive word of a name ("Tidepool") stands for it; "labs", "health", "open" do not.
      if (word.length > 3 && !FUNCTION_WORDS.has(base) && !FRAME_WORDS.has(base))
        if (!DOMAIN_WORDS.has(base) && !CAREER_WORDS.has(base) && !GENERIC_NAME_WORDS.has(base))
          entityTokens.add(word);
    }
  }
  const known = new Set<string>();
  for (const word of [...vocabulary.terms, ...vocabulary.technologies.flatMap(topicWords)])
    known.add(baseForm(word));
  const result = { ownerTokens, entityPhrases, entityTokens, known };
  if (!bySubject) {
    bySubject = new Map();
    compiled.set(vocabulary, bySubject);
  }
  bySubject.set(key, result);
  return result;
}

/** Words in names that also mean ordinary things ("Northwind Health", "Brightlane Labs", "Personal Project"). */
const GENERIC_NAME_WORDS = set(`
labs lab health personal project projects open source inc ltd llc gmbh group studio studios
solutions systems technologies digital global international company corp corporation partners
university college school institute academy canvas signal orbit pine parcel ask
`);

/** Multilingual portfolio words, matched inside the folded text (any script). */
const FOREIGN_FRAME =
  /\b(?:proyectos?|experiencia|habilidades|trabajo|trabajado|trabaja|trabajar|disponible|empresa|curriculum|contratar|contactar|projets?|experience|competences|travail|travaille|entreprise|embaucher|contacter|projekte?n?|erfahrung|kenntnisse|arbeit|arbeitet|gearbeitet|firma|lebenslauf|kontakt|projetos?|experiencia|trabalho|trabalhou|trabalha|contratar|progetti|esperienza|lavoro|lavorato|azienda|assumere|kaam|naukri|anubhav)\b|проект|опыт|работ|навык|резюме|项目|經驗|经验|技能|工作|简历|プロジェクト|経験|スキル|職歴|仕事|経歴|مشاريع|مشروع|خبرة|مهارات|عمل|प्रोजेक्ट|अनुभव|काम|कौशल/;

function lazy<T>(compute: () => T): () => T {
  let value: T;
  let done = false;
  return () => {
    if (!done) {
      value = compute();
      done = true;
    }
    return value;
  };
}

/**
 * Reads what a question is about. The common case (the owner or an entity
 * named) is settled by set lookups; the pattern tests behind the other
 * fields run only when a field is read.
 */
export function readTopic(
  question: string,
  subject: PreRouterSubject,
  vocabulary: PortfolioVocabulary,
  words: string[] = topicWords(question),
): TopicReading {
  const vocab = compile(subject, vocabulary);
  const text = ` ${words.join(" ")} `;
  const plain = text.trim();
  const bases = words.map(baseForm);

  // "averys" is "Avery's" typed without the apostrophe.
  const namesOwner = words.some(
    (word) => vocab.ownerTokens.has(word) || vocab.ownerTokens.has(word.replace(/s$/, "")),
  );
  const namesEntity =
    vocab.entityPhrases.some((phrase) => text.includes(phrase)) ||
    words.some((word) => vocab.entityTokens.has(word));
  const pronoun = words.some((word) => PRONOUN_REFERENCES.has(word));
  const secondPerson = words.some((word) => SECOND_PERSON.has(word));
  const described = lazy(() => DESCRIBED_OWNER.test(plain));
  const namesOwnerOrEntity = lazy(() => namesOwner || namesEntity || pronoun || described());

  const outsideWords = lazy(() =>
    words.filter((word, i) => {
      const base = bases[i]!;
      if (/^\d/.test(word)) return false;
      return !(
        FUNCTION_WORDS.has(base) ||
        FRAME_WORDS.has(base) ||
        PORTFOLIO_NOUNS.has(base) ||
        CAREER_WORDS.has(base) ||
        DOMAIN_WORDS.has(base) ||
        vocab.known.has(base) ||
        vocab.ownerTokens.has(word) ||
        vocab.entityTokens.has(word)
      );
    }),
  );
  const frame = lazy(() => {
    // "how does the stock market work": the verb, not the owner's work.
    const howItWorks = /\bhow (?:does|do|did|can|will) .+ work$/.test(plain);
    if (bases.some((base, i) => FRAME_WORDS.has(base) && !(howItWorks && i === bases.length - 1)))
      return true;
    return outsideWords().length > 0 && FOREIGN_FRAME.test(plain);
  });
  const contact = lazy(() => CONTACT_INTENT.test(plain));
  const askerCentred = lazy(() => ASKER_CENTRED.test(plain));
  const requested = lazy(() => REQUEST.test(plain) || HELP_ME.test(plain));
  const request = lazy((): TopicReading["request"] => {
    const codeFrame = requested() || askerCentred() || /^(?:fix|debug)\b/.test(plain);
    if (codeFrame && CODE_TASK.test(plain)) return "code";
    if (requested() && CREATIVE_OBJECT.test(plain)) return "creative";
    return requested() ? "task" : null;
  });
  const definitional = lazy(
    () =>
      DEFINITIONAL.test(plain) &&
      bases.some((base) => !FUNCTION_WORDS.has(base)) &&
      !(
        ANAPHORA.test(plain) &&
        outsideWords().length === 0 &&
        !bases.some((base) => DOMAIN_WORDS.has(base))
      ),
  );
  const aboutPortfolio = lazy(() => {
    if (askerCentred())
      return (
        namesOwnerOrEntity() ||
        (!/\bmy\b/.test(plain) &&
          (contact() || (ACCESS_INTENT.test(plain) && (frame() || secondPerson))))
      );
    if (namesOwnerOrEntity() || frame() || contact()) return true;
    if (!secondPerson) return false;
    return bases.some(
      (base) => DOMAIN_WORDS.has(base) || CAREER_WORDS.has(base) || vocab.known.has(base),
    );
  });
  const workWords = () =>
    bases.some(
      (base) =>
        FRAME_WORDS.has(base) ||
        PORTFOLIO_NOUNS.has(base) ||
        CAREER_WORDS.has(base) ||
        DOMAIN_WORDS.has(base),
    );
  return {
    get ownerAsYou() {
      return secondPerson && !askerCentred() && request() === null && workWords();
    },
    get subjectBeyondFrame() {
      return bases.some(
        (base) =>
          !FUNCTION_WORDS.has(base) &&
          !FRAME_WORDS.has(base) &&
          !PORTFOLIO_NOUNS.has(base) &&
          !/^\d/.test(base),
      );
    },
    get pleasantry() {
      return (
        words.length <= 7 && PLEASANTRY.test(plain) && !requested() && !DEFINITIONAL.test(plain)
      );
    },
    get frame() {
      return frame();
    },
    get foreignFrame() {
      return FOREIGN_FRAME.test(plain);
    },
    get portfolioNoun() {
      return bases.some((base) => PORTFOLIO_NOUNS.has(base)) || described() || contact();
    },
    get advice() {
      return ADVICE.test(plain);
    },
    get onlyFunctionWords() {
      return bases.every((base) => FUNCTION_WORDS.has(base));
    },
    get aboutPortfolio() {
      return aboutPortfolio();
    },
    get namesOwnerOrEntity() {
      return namesOwnerOrEntity();
    },
    get request() {
      return request();
    },
    get askerCentred() {
      return askerCentred();
    },
    // "What is GraphQL?" asks about the world; "what was the outcome?" (function words only) about the last answer.
    get definitional() {
      return definitional();
    },
    get outsideWords() {
      return outsideWords();
    },
  };
}

/** The off-topic decision over a reading. */
export function isOffTopic(reading: TopicReading): boolean {
  if (reading.request === "creative" || reading.request === "code") return true;
  if (reading.namesOwnerOrEntity || reading.ownerAsYou || reading.pleasantry) return false;
  // The asker's own matters, unless they ask how to reach or see the owner's material.
  if (reading.askerCentred) return !reading.aboutPortfolio;
  if (reading.portfolioNoun) return false;
  // "can you summarise that?", "explain that": about the last answer.
  if (reading.onlyFunctionWords) return false;
  if (!reading.aboutPortfolio) {
    if (reading.request === "task" || reading.definitional) return true;
    return reading.outsideWords.length > 0 || reading.advice;
  }
  // Only portfolio words ("projects", "experience"): general advice, a
  // chore, or a definition of something else that mentions them is still
  // off-topic; "what are the projects?" is not.
  return (
    reading.request === "task" ||
    reading.advice ||
    (reading.definitional && reading.subjectBeyondFrame)
  );
}
