/**
 * Safety pre-router: answers attacks and out-of-scope questions with a
 * canned reply before any embedding, retrieval or generation happens.
 *
 * Improvements over the original's regex list:
 * - punctuation is normalised (`work.` is `work`), apostrophes and curly
 *   quotes are folded, zero-width characters and look-alike Cyrillic letters
 *   are removed or mapped;
 * - obfuscation is undone in extra "views" of the text that every rule is
 *   checked against: leetspeak (`1gn0r3`), spaced or dotted letters
 *   (`i g n o r e`, `s.e.x`), words split by a separator (`jail-break`),
 *   masked profanity (`f*ck`), and base64 payloads, which are decoded and
 *   classified themselves (a hidden instruction is an injection);
 * - rules are phrased around how a question addresses the assistant, so
 *   "Did Avery act as tech lead?", "What package managers does Avery use?"
 *   and "Is Avery an AI engineer?" are ordinary portfolio questions.
 */

import { decodeBase64, foldCharacters, LEET } from "./safety-normalise.ts";

export type PreRouterCategory =
  | "prompt_injection"
  | "explicit"
  | "identity"
  | "private"
  | "off_topic";

export type PreRouterReason =
  | "prompt_override_attempt"
  | "explicit_content"
  | "personhood_confusion"
  | "assistant_identity"
  | "compensation"
  | "sensitive_personal_data"
  | "unsupported_topic";

export type PreRouterDecision =
  | { bypass: true; category: PreRouterCategory; reason: PreRouterReason }
  | { bypass: false; category: "normal"; reason: "normal_rag" };

export interface PreRouterSubject {
  /** The person's name as configured, e.g. "Avery Quinn". */
  personName: string;
  /** The assistant's name, e.g. "Ask Avery". */
  assistantName: string;
}

/** Word tokens: letters and digits only, so every punctuation mark is a boundary. */
function words(text: string): string[] {
  return text
    .replace(/'s\b/g, " s")
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Leetspeak inside words that also contain letters (`pr0mpt`, `s3x`); plain numbers stay. */
function deLeetToken(raw: string): string {
  if (!/[a-z]/.test(raw) || !/[0-9@$!|]/.test(raw)) return raw;
  return raw.replace(/[0-9@$!|]/g, (ch) => LEET[ch] ?? ch);
}

/** Joins runs of 3+ single letters (`i g n o r e`, `s.e.x`) into one word. */
function joinSpelledOut(tokens: string[]): string[] {
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length >= 3) out.push(run.join(""));
    else out.push(...run);
    run = [];
  };
  for (const token of tokens) {
    if (token.length === 1 && /[a-z]/.test(token)) run.push(token);
    else {
      flush();
      out.push(token);
    }
  }
  flush();
  return out;
}

/** Words attackers split with a separator (`jail-break`, `sys tem`); merging them back is safe. */
const SPLIT_VOCABULARY = new Set([
  "ignore",
  "disregard",
  "instructions",
  "previous",
  "system",
  "prompt",
  "jailbreak",
  "pretend",
  "bypass",
  "override",
  "roleplay",
  "porn",
  "nude",
  "nudes",
  "naked",
  "sexy",
  "fuck",
  "fucking",
  "salary",
  "password",
]);

function mergeSplitWords(tokens: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const here = tokens[i]!;
    const next = tokens[i + 1];
    const third = tokens[i + 2];
    if (next !== undefined && third !== undefined && SPLIT_VOCABULARY.has(here + next + third)) {
      out.push(here + next + third);
      i += 2;
    } else if (
      next !== undefined &&
      SPLIT_VOCABULARY.has(here + next) &&
      !SPLIT_VOCABULARY.has(here)
    ) {
      out.push(here + next);
      i += 1;
    } else out.push(here);
  }
  return out;
}

/** Masked profanity (`f*ck`, `f**king`, `sh!t`) to its plain form before tokenising. */
function unmaskProfanity(text: string): string {
  return text
    .replace(
      /\bf[*#@%_.\-u]{1,3}c?k(ing|in|er|ed)?\b/g,
      (_m, suffix: string | undefined) => `fuck${suffix ?? ""}`,
    )
    .replace(/\bf[*#@%]{2,4}(ing)?\b/g, (_m, suffix: string | undefined) => `fuck${suffix ?? ""}`)
    .replace(/\bsh[*!#@1]t\b/g, "shit")
    .replace(/\bb[*!#@1]tch\b/g, "bitch")
    .replace(/\bp[*0o]rn\b/g, "porn");
}

interface Views {
  /** Space-delimited normalised texts, each padded with spaces for whole-word matching. */
  texts: string[];
}

/**
 * Undoes letter spacing where words are separated by wider gaps:
 * "I G N O R E  A L L" becomes "ignore all" (a run of single letters between
 * two-space gaps is one word).
 */
function joinSpacedSegments(text: string): string {
  return text
    .split(/\s{2,}|\s+\/\s+/)
    .map((segment) =>
      /^(?:[a-z0-9][ .\-_*]){2,}[a-z0-9]$/.test(segment.trim())
        ? segment.replace(/[ .\-_*]/g, "")
        : segment,
    )
    .join(" ");
}

/**
 * Work words that give "explicit" its technical sense in the same sentence:
 * moderating or filtering explicit content, explicit details of a design.
 */
const EXPLICIT_WORK_SENSE = String.raw`(?:moderat\w*|filter\w*|detect\w*|classif\w*|flag\w*|block\w*|polic(?:y|ies)|guardrails?|safety|architecture|design|code|codebase|api|implementation|migrations?|pipeline|system|types?|typing|config\w*|docs|documentation|requirements?|spec|specs|tests?)`;

/** High-signal strings looked for inside words that were spelled out letter by letter. */
const SPELLED_SIGNALS: { pattern: RegExp; category: "injection" | "explicit" }[] = [
  {
    pattern:
      /ignore(?:all)?(?:your|the|my)?(?:previous|prior|above)|ignore(?:all|your)(?:rules|instructions)|disregard|systemprompt|jailbreak|developermode|pretendyou|revealyour|bypass/,
    category: "injection",
  },
  { pattern: /porn|nude|naked|fuck|sexy|sexchat|nsfw/, category: "explicit" },
];

function spelledSignals(question: string): Set<"injection" | "explicit"> {
  const found = new Set<"injection" | "explicit">();
  const tokens = words(foldCharacters(question));
  const joined = joinSpelledOut(tokens).filter((token) => !tokens.includes(token));
  for (const token of joined)
    for (const signal of SPELLED_SIGNALS)
      if (signal.pattern.test(token)) found.add(signal.category);
  return found;
}

function buildViews(question: string): Views {
  const folded = joinSpacedSegments(unmaskProfanity(foldCharacters(question)));
  const plain = words(folded);
  // Leetspeak is undone on the raw (symbol-bearing) words before splitting on symbols.
  const leet = words(
    folded
      .split(/\s+/)
      .map((raw) => deLeetToken(raw))
      .join(" "),
  );
  const spelled = joinSpelledOut(leet);
  const merged = mergeSplitWords(spelled);
  const texts = new Set<string>();
  for (const view of [plain, leet, spelled, merged]) texts.add(` ${view.join(" ")} `);
  return { texts: [...texts] };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

interface Rules {
  injection: RegExp[];
  explicit: RegExp[];
  personhood: RegExp[];
  assistant: RegExp[];
  compensation: RegExp[];
  sensitive: RegExp[];
  offTopic: RegExp[];
  portfolioTerms: RegExp;
}

/** Compiles the rule set; `{N}` is the person's name (full, first or last) and `{A}` the assistant's. */
function compileRules(subject: PreRouterSubject): Rules {
  const nameParts = words(foldCharacters(subject.personName));
  const names = new Set<string>();
  if (nameParts.length > 0) names.add(nameParts.join(" "));
  for (const part of nameParts) if (part.length > 2) names.add(part);
  const nameAlternation = [...names].map(escapeRegex).join("|") || "the owner";
  const person = `(?:${nameAlternation})`;
  const assistantName = words(foldCharacters(subject.assistantName)).map(escapeRegex).join(" ");
  const subjectRef = `(?:${nameAlternation}|he|she|they|him|her|them)`;
  const possessive = `(?:his|her|their|(?:${nameAlternation}) s)`;
  const build = (sources: string[]) =>
    sources.map(
      (source) =>
        new RegExp(
          source
            .replaceAll("{T}", PRODUCT_TAIL)
            .replaceAll("{N}", person)
            .replaceAll("{S}", subjectRef)
            .replaceAll("{P}", possessive)
            .replaceAll("{A}", assistantName || "the assistant"),
        ),
    );

  return {
    injection: build([
      String.raw` (?:ignore|disregard|forget|override|overwrite|abandon|discard) (?:all |any |every |the |your |my |these |those |of |that )*(?:previous |prior |earlier |above |preceding |former |original |initial |existing |old |current |system |safety |hidden )*(?:instructions?|rules?|prompts?|directions?|guidelines?|guardrails?|constraints?|programming|restrictions?|directives?)\b`,
      String.raw` (?:ignore|disregard|forget) (?:all |the |your )*(?:previous |prior |earlier |above |preceding )(?:messages?|context|conversation|text|answers?)\b`,
      String.raw` (?:ignore|disregard|forget) (?:everything|anything|all)(?: (?:you were|you ve been|i|you have been|above|before|said|told))?`,
      String.raw`(?<!(?:built|build|building|wrote|write|writing|designed|design|designing|tested|testing|on|about|improved|improve)(?: a| an| the| their| his| her)?) system (?:prompt|message|instructions?|rules?)\b{T}`,
      String.raw` (?:developer|admin|hidden|secret|initial|internal|original|base) (?:message|prompt|instructions?)\b`,
      String.raw` (?:hidden|secret|internal) rules\b`,
      String.raw` developer mode\b{T}(?! in )`,
      String.raw` (?:reveal|show|print|display|repeat|output|leak|dump|recite|share|tell me|give me|paste|echo|spell out|what (?:is|are|were)) (?:me )?(?:all )?(?:your |its )(?:full |exact |entire |original |initial |first |hidden |secret |internal |underlying )*(?:prompts?|instructions?|rules|configuration|config|guidelines|directives|context window|preprompt)\b`,
      String.raw` (?:reveal|show|print|display|repeat|output|leak|dump|recite|paste|echo) (?:me )?(?:the |your )?(?:full |exact |entire |original |initial |first |hidden |secret |internal |underlying )+(?:prompts?|instructions?|rules|configuration|guidelines|directives)\b`,
      String.raw` (?:reveal|repeat|leak|dump|recite|print) (?:me )?(?:the |your )?(?:prompt|preprompt)\b`,
      String.raw` (?:what|how) (?:were|was) you (?:told|instructed|programmed|prompted)\b`,
      String.raw` (?:repeat|print|output|show|reveal|echo|recite|copy) (?:me )?(?:the |all |all the |everything in the )?(?:text|words|message|messages|content|conversation|everything|lines) (?:above|before|preceding|so far)\b`,
      String.raw` (?:jailbreak|jailbroken|jailbreaking|dan mode|do anything now|god mode|unrestricted mode|unfiltered mode)\b{T}`,
      String.raw` (?:bypass|circumvent|disable|turn off|switch off|deactivate|evade|get around) (?:your |the |all |any |these |those |its )*(?:safety |content |security )?(?:rules?|filters?|guardrails?|safety|restrictions?|safeguards?|policies|policy|censorship|moderation|alignment)\b`,
      String.raw` (?:without|with no|free (?:of|from)|no longer (?:bound by|restricted by|limited by)|not bound by) (?:any |your |the )*(?:rules?|restrictions?|filters?|guardrails?|limitations|limits|censorship|guidelines)\b`,
      String.raw`(?:^ |\bplease |\byou |\bnow |\bcould you |\bcan you |\bwill you |\bwould you |\bi want you to |\bi need you to |\blet s |\bfrom now on |\bhenceforth |\bplease just )(?:act|behave|respond|answer|reply|talk|speak|write) (?:as|like) (?:if |though |a |an |my |the |you |someone |somebody )`,
      String.raw` (?:pretend|imagine|suppose|roleplay|role play) (?:that )?(?:you are|you re|to be|you were|you have|you can|we are|i am|i m your)\b`,
      String.raw` (?:roleplay|role play|impersonate|impersonating)\b`,
      String.raw`(?:^ |you |please |now |can you |could you |will you |i want you to )(?:play|take on|assume|adopt) (?:the )?(?:role|part|persona|character) of\b`,
      String.raw`(?:^ | and | then )you are (?:now |no longer |from now on |henceforth )`,
      String.raw` from now on (?:you|your|respond|answer|reply|act|only)\b`,
      String.raw` new (?:instructions?|persona|personality|identity|system prompt)\b`,
      String.raw` your new (?:rules|task|role|job|goal)\b`,
      String.raw` (?:sudo|admin override|developer override|root access)\b(?! (?:the|a|an|of|default|some|its|their) )`,
      String.raw` (?:im start|im end|endoftext|begin system|end system|inst sys|sys inst)\b`,
      String.raw` (?:decode|decrypt|deobfuscate|translate|interpret|run|execute) (?:this|the following|that|these|it) (?:base64|b64|rot13|hex|encoded|cipher)\b`,
      String.raw` (?:decode|decrypt|deobfuscate) (?:and|then) (?:follow|do|obey|execute|run|answer|act)\b`,
      String.raw` (?:base64|b64|rot13)(?: encoded| string| text| message)? (?:and|then) (?:follow|do|obey|execute|run|answer|act)\b`,
      String.raw` (?:follow|obey|execute|do what|comply with) (?:the |these |this |my )?(?:hidden|encoded|decoded|following|secret) (?:instructions?|text|message|command|commands)\b`,
    ]),
    explicit: build([
      String.raw` (?:sex|sexy|sexting|sexually|porn|porno|pornography|pornographic|nsfw|xxx|hentai|onlyfans|boobs|boob|tits|titties|penis|vagina|dick|dicks|cock|cocks|pussy|blowjob|handjob|horny|orgasm|orgasms|fetish|fetishes|erotic|erotica|nude|nudes|naked(?! (?:domains?|pointers?|urls?|returns?|objects?|functions?|eye|metal|dns))|nudity|stripper|strip club|camgirl|milf|genitals|masturbate|masturbation)\b`,
      String.raw` sexual(?! orientation| harassment| identity)\b`,
      String.raw` (?:fuck|fucks|fucked|fucker|fuckers|fucking|fuckin|motherfucker|motherfucking|shit|shitty|bullshit|bitch|bitches|asshole|assholes|cunt|cunts|slut|sluts|whore|whores|bastard|dickhead|wanker|twat|bollocks)\b`,
      // "explicit content moderation", "explicit details of the migration": the word's work senses.
      // Anchored lookaheads: a lookbehind here would be tried at every position.
      String.raw`^(?=.* explicit (?:content|photos?|pics?|pictures?|images?|videos?|material|stories|story|chat|talk|details|scenes?|messages?)\b)(?!.*\b${EXPLICIT_WORK_SENSE}\b)`,
      String.raw` (?:dirty|naughty|kinky|spicy) (?:talk|pics?|pictures?|photos?|jokes?|stories|story|chat|things|fantasies)\b`,
      String.raw` (?:talk|talking|speak|chat) (?:dirty|sexy|naughty)\b`,
      String.raw` (?:sleep|sleeping|slept|hook up|hooking up|make love|making love|have sex) with\b`,
      String.raw` (?:send|show|share) (?:me )?(?:your |some |a )?(?:body|bikini|lingerie|underwear) (?:pics?|photos?|pictures?)\b`,
    ]),
    personhood: build([
      String.raw` are (?:you|u) (?:really |actually |truly |secretly |literally )?(?:{N}|the real (?:one|person|{N}|human|deal)|a real (?:person|human)|a human(?: being)?|human|him|her|them|the (?:person|owner|guy|woman|man)|real|alive|a person|conscious|sentient)\b`,
      String.raw` is (?:this|that|it) (?:really |actually |truly )?(?:{N}|the real|a real (?:person|human)|a human|you {N}|him|her|them|a person)\b`,
      String.raw` (?:am i|are we|i m|i am) (?:talking|speaking|chatting|texting|writing|messaging) (?:to|with) (?:{N}|him|her|them|a (?:real )?(?:human|person)|the real|the actual|an actual (?:person|human)|someone real)\b`,
      String.raw` (?:can|could|may|do|will) i (?:talk|speak|chat|text|write|get through) (?:to|with) (?:{N}|him|her|them|a (?:real )?(?:human|person)|the real|the actual|an actual (?:person|human)|someone real|the person)\b`,
      String.raw` (?:put me through to|let me (?:talk|speak|chat) (?:to|with)|connect me (?:to|with)) (?:{N}|him|her|them|a human|a person|the real)\b`,
      String.raw`(?:^ | and )(?:you are|you re|youre) (?:{N}|him|her|the real|a human|human|a real person)\b`,
      String.raw` (?:{N}|is that you|is it you) (?:is that you|is it you|is that really you|are you there)\b`,
      String.raw` is (?:{N}|he|she) (?:typing|replying|answering|responding|reading this|here|online|behind this|behind you|on the other end|writing these)\b`,
      String.raw` do you speak (?:for|on behalf of) {N}\b`,
      String.raw`(?:^ | )(?:hi|hey|hello|dear) {N}(?: are you there| is that you)\b`,
    ]),
    assistant: build([
      String.raw` who (?:are|r) (?:you|u)\b`,
      String.raw`(?:^ | and | so )what (?:are|r) (?:you|u)(?: exactly| really| actually| supposed to be| anyway)? (?:$|and )`,
      String.raw` who (?:am i|are we) (?:talking|speaking|chatting) (?:to|with)\b`,
      String.raw` what (?:am i|are we) (?:talking|speaking|chatting) (?:to|with)\b`,
      String.raw` are (?:you|u) (?:a |an |just a |just an |some kind of |some sort of |some )?(?:ai|a i|bot|chatbot|chat bot|robot|assistant|llm|language model|large language model|gpt|chatgpt|machine|computer|program|script|automated|automatic|artificial|virtual assistant)\b`,
      String.raw`(?:^ | and | so )what (?:can|do|could|will) you do(?: exactly| here| for me| for us)? (?:$|and )`,
      String.raw` what (?:is|s) (?:this|this thing|this chat|this bot|this assistant|this chatbot|this site|this page) (?:$|for |about $)`,
      String.raw` what (?:model|llm|ai|language model|version) (?:are you|is this|powers you|do you (?:use|run))\b`,
      String.raw` who (?:made|built|created|programmed|trained|developed|designed|wrote|owns|runs) (?:you|this (?:bot|chatbot|assistant|chat))\b`,
      String.raw` (?:introduce yourself|tell me about yourself|describe yourself)\b`,
      String.raw` what (?:is|s) your (?:name|purpose|job|role|function)\b`,
      String.raw` (?:how do you work|how does this (?:bot|chat|assistant) work)\b`,
      String.raw` (?:are you|is this) {A}\b`,
    ]),
    compensation: build([
      String.raw` (?:salary|salaries|wage|wages|ctc|compensation|remuneration|income|net worth|networth|payslip|paycheck|paycheque|pay slip|stipend|lpa|take home pay|pay grade|pay scale|pay band|pay range|hourly rate|day rate|daily rate|rate card|bonus|bonuses|stock options|equity stake|earnings)\b{T}`,
      String.raw` how much (?:money )?(?:\S+ ){0,4}(?:earn|earns|earned|earning|make|makes|made|making|charge|charges|charged|get paid|gets paid|got paid|paid|pay|bill|bills|ask for|take home)\b`,
      String.raw` what (?:does|did|do|would|will) {S} (?:earn|charge|get paid|take home|bill)\b(?! (?:a |the )?(?:reputation|respect|name|trust|promotion|award|certification|degree|title|spot|place|role)\b)`,
      String.raw` (?:earn|earns|earned|make|makes|paid|charge|charges|charged) (?:\S+ ){0,3}(?:per|a|an|each|every) (?:year|month|hour|day|week|annum)\b`,
      String.raw` (?:is|was|are|were|get|gets|got) {S} (?:well |highly |under |over |fairly |poorly |properly )?(?:paid|compensated)\b`,
      String.raw` (?:salary|pay|compensation|remuneration|benefits|joining|relocation|annual|yearly|monthly|ctc) package\b`,
      String.raw` {P} (?:current |last |previous |expected |annual |yearly |total )?package\b`,
      String.raw` package (?:of|is|was|at|per|in) (?:\d|rs|inr|usd|\$|lpa|annum|year|lakh|crore|k\b)`,
      String.raw` (?:expected|current|desired|asking|previous|last) (?:salary|ctc|pay|rate|package)\b`,
      String.raw` (?:how rich|is {S} rich|bank balance|how wealthy)\b`,
      String.raw` (?:is|was|are) {S} (?:rich|wealthy|a millionaire|a billionaire|broke|in debt|loaded|well off|underpaid|overpaid|paid well)\b`,
      String.raw` (?:how much|what) (?:money )?(?:has|have|does|did|do) {S} (?:saved|save|have saved|put away|invested|got in the bank|keep in the bank)\b`,
      String.raw` {P} (?:savings|finances|financial situation|wealth|investments|paycheck|take home|annual pay|yearly pay|monthly pay)\b{T}`,
    ]),
    sensitive: build([
      String.raw` (?:phone|mobile|cell|cellphone|telephone|whatsapp|personal|home|private|landline|contact) (?:number|no|num|digits)\b{T}`,
      String.raw` (?:whatsapp|telegram|signal app|phone no)\b`,
      String.raw` (?:home|house|residential|residence|street|mailing|postal|physical|apartment|flat|personal) address\b`,
      String.raw` where (?:does|do|did|is|are) {S}? ?(?:live|lives|living|reside|resides|residing|stay|stays|staying|sleep)\b`,
      String.raw` where (?:is|s) {P} (?:home|house|apartment|flat|family)\b`,
      String.raw` which (?:city|town|neighborhood|neighbourhood|area|street|building|suburb) (?:does|do|did) {S}? ?(?:live|reside|stay)\b`,
      String.raw` (?:date of birth|dob|birthday|birth date|birthdate|birth year|year of birth|place of birth|birthplace)\b{T}`,
      String.raw` (?:when|what year|which year|where) (?:was|were|is) {S} born\b`,
      String.raw` how old (?:is|was|are|were|will) {S}\b(?! (?:[a-z]+ ){0,3}(?:s|project|projects|repo|repos|repository|app|apps|company|startup|product|products|codebase|library|site|website|blog|account|portfolio|career|team|job|work|code)\b)`,
      String.raw` (?:what|which) age (?:is|was|did|does|were) {S}\b`,
      String.raw` {P} (?:age|height|weight|religion|caste|ethnicity|race|politics|political views|family|kids|children|parents|mother|father|mom|dad|sister|brother|wife|husband|spouse|partner|girlfriend|boyfriend|fiance|fiancee|diagnosis|address|password|passwords|pin|login|bank)\b`,
      String.raw` age of {N}\b(?! (?:[a-z]+ )?s )`,
      String.raw` (?:relationship status|marital status|girlfriend|boyfriend|wife|husband|spouse|fiance|fiancee|dating life|love life)\b`,
      String.raw` (?:is|are|was) {S} (?:married|single(?! hand)|dating|engaged|divorced|in a relationship|seeing someone|pregnant|gay|lesbian|bisexual|transgender|religious|christian|muslim|hindu|jewish|atheist|sick|ill|disabled|a democrat|a republican)\b`,
      String.raw` (?:does|do|did) {S} have (?:a |any )?(?:kids|children|girlfriend|boyfriend|wife|husband|partner|disease|illness|disability|condition|adhd|autism|depression|anxiety|cancer|diabetes)\b`,
      String.raw` (?:religion|religious beliefs|religious views|caste|sexual orientation|political (?:views|affiliation|party|leaning|leanings|opinions|beliefs|stance)|who (?:does|did|do|will|would) {S} vote for|voted for|votes for)\b`,
      String.raw` {P} (?:medical|health|mental health) (?:condition|conditions|history|issues|records|status|problems)\b{T}`,
      String.raw` (?:medical|health|mental health) (?:condition|conditions|history|issues|records|status|problems) (?:of|for) {S}\b`,
      String.raw` (?:social security|ssn|passport number|aadhaar|aadhar|pan card|national id|id card number|driver s license|drivers license|driving licence|license number|bank account|credit card|debit card)\b`,
      String.raw` (?:personal|private|home|secret) (?:email|e mail|mail|instagram|facebook|snapchat|social media|accounts?|number|details|information|info|life)\b`,
      String.raw` where (?:is|was) {S} (?:right now|at the moment|currently|now|today|tonight)\b`,
      String.raw` (?:current|exact|real time|gps) location\b`,
    ]),
    offTopic: build([
      String.raw` (?:weather|forecast|temperature|raining|snowing|humidity|sunny)\b`,
      String.raw` (?:sports?|scores?|match|matches|tournament|league|cricket|football|soccer|basketball|baseball|tennis|golf|hockey|nba|nfl|ipl|fifa|world cup|olympics|super bowl|premier league)\b`,
      String.raw` (?:recipe|recipes|cook|cooking|bake|baking|restaurant|restaurants|dinner|lunch|breakfast)\b`,
      String.raw` (?:travel|flight|flights|hotel|hotels|vacation|holiday destination|tourist|visa for)\b`,
      String.raw` (?:bitcoin|crypto|cryptocurrency|ethereum|dogecoin|stock market|stock price|stocks|share price|shares of|forex|invest in)\b`,
      String.raw` (?:election|elections|politics|president|prime minister|parliament|congress|senate|government)\b`,
      String.raw` (?:translate|translation|poem|poems|poetry|haiku|limerick|sonnet|joke|jokes|riddle|riddles|pun|puns)\b`,
      String.raw` (?:movie|movies|film|films|tv show|netflix|series to watch|song|songs|lyrics|album|celebrity|celebrities|actor|actress|singer)\b`,
      String.raw` (?:horoscope|zodiac|astrology|lottery|tarot|fortune)\b`,
      String.raw` (?:capital of|population of|meaning of life|homework|essay|distance between|how tall is|how far is)\b`,
      String.raw` write (?:me )?(?:a |an |some )?(?:story|stories|essay|poem|song|letter|cover letter|novel|speech|tweet)\b`,
      String.raw` (?:write|give me|generate|create) (?:me )?(?:a |an |some )?(?:python |javascript |typescript |java |c |sql |bash |rust |go )?(?:code|function|script|program|regex|query|snippet) (?:for|to|that)\b`,
      String.raw` (?:what is|what s|calculate|compute|solve) \d+ (?:plus |minus |times |x |divided by |over )?\d+\b`,
      String.raw` (?:solve|calculate) (?:this|the) (?:equation|math|integral|sum)\b`,
      String.raw` (?:news|headlines|latest news)\b`,
    ]),
    portfolioTerms: new RegExp(
      String.raw` (?:${nameAlternation}|portfolio|projects?|skills?|experiences?|experienced|resume|cv|work|works|worked|working|career|background|linkedin|testimonials?|recommendations?|references?|contact|email|hire|hiring|roles?|company|companies|employer|employers|stack|tech|technology|technologies|built|build|builds|building|job|jobs|position|education|degree|certifications?|projects?|clients?|colleagues?|team|teams|engineer|engineering|developer|profile|achievements?|accomplishments?|expertise|freelance|availability|available|collaborat\w*|led|lead|shipped|app|apps|product|products|case stud\w*)\b`,
    ),
  };
}

/**
 * Not a request for the thing itself when the keyword names something that
 * was built ("a salary benchmarking tool", "phone number verification",
 * "a system prompt editor"): a lookahead appended to keyword rules.
 */
const PRODUCT_TAIL = String.raw`(?! (?:[a-z]+ ){0,2}(?:tool|tools|dashboard|dashboards|app|apps|application|applications|system|systems|software|feature|features|project|projects|api|apis|service|services|calculator|calculation|module|engine|platform|form|forms|flow|flows|verification|validation|benchmarking|detection|editor|editors|page|pages|pipeline|pipelines|integration|integrations|library|sdk|widget|widgets|component|components|schema|field|fields|endpoint|endpoints|tracker|tracking|management|planning|reports?|product|products|startup|fintech|data|generation|generator|testing|tests|slips?|workflows?|automation|processing)\b)`;

/** Chat-template markup and fake authority headers, checked on the raw text. */
const MARKUP =
  /\[\/?inst\]|<<\/?sys>>|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|(?:^|\n)\s*#{2,}\s*(?:system|instruction|instructions)\b|\bsystem\s+(?:override|prompt|message|notice|update)\s*:|(?:^|\n)\s*(?:system|admin|developer)\s*:|\bp\.?\s?s\.?\s*:?\s*(?:new|updated) (?:rule|instruction|policy)|<\/?(?:system|instructions?)>|"role"\s*:\s*"system"|\badmin (?:notice|override|command)\s*:|\bend of user input\b/i;

/**
 * Injections in other languages: a verb of ignoring/forgetting/revealing
 * with a word for instructions or rules, on accent-free folded text.
 */
const MULTILINGUAL_INJECTION: RegExp[] = [
  // es / pt / it
  /\b(?:ignora|ignore|ignorar|ignorem|olvida|olvidate|esqueca|esquece|esquecer|dimentica|dimenticare)\b.{0,40}\b(?:instrucciones|instrucoes|istruzioni|reglas|regras|regole|indicaciones|normas|orientacoes)\b/,
  /\b(?:muestrame|muestra|revela|dime|mostra|mostre|mostrami|rivela|dimmi|comparte|compartir)\b.{0,30}\b(?:prompt|instrucciones|instrucoes|istruzioni|reglas|regras|regole) (?:del |de |di )?(?:sistema|ocultas|secretas|segrete|nascoste|ocultas)\b/,
  /\b(?:instrucciones|instrucoes|istruzioni) (?:ocultas|secretas|segrete|nascoste|iniciales|iniciais|iniziali|del sistema|do sistema|di sistema)\b/,
  // fr
  /\b(?:ignore|ignorez|oublie|oubliez)\b.{0,40}\b(?:instructions|regles|consignes|directives)\b/,
  /\b(?:consignes|instructions|regles) (?:secretes|cachees|systeme|initiales)\b|\bmessage systeme\b|\bprompt systeme\b/,
  // de
  /\b(?:ignoriere|ignorier|vergiss|vergessen sie|missachte)\b.{0,40}\b(?:anweisungen|regeln|vorgaben|instruktionen)\b/,
  /\b(?:systemprompt|systemanweisungen?|versteckten anweisungen|geheimen (?:regeln|anweisungen))\b/,
  // romanised Hindi
  /\b(?:instructions?|rules?|nirdesh|niyam)\b.{0,30}\b(?:bhool|bhul|ignore)\s*(?:jao|jaao|ja|karo|kar do|kardo|do)\b/,
  /\b(?:bhool|bhul) (?:jao|jaao) .{0,30}\b(?:instructions?|rules?|nirdesh)\b/,
  // ru / zh / ja / ar / hi
  /игнорируй|забудь (?:все )?(?:предыдущие|свои)|системн\S* (?:промпт|инструкци)/,
  /忽略.{0,10}(?:指令|指示|规则)|系统提示|以前の指示|指示を無視|システムプロンプト/,
  /تجاهل.{0,30}التعليمات|موجه النظام/,
  /निर्देशों को (?:अनदेखा|भूल)|सिस्टम प्रॉम्प्ट/,
];

/** Pay and private details asked in other languages (accent-free folded text). */
const MULTILINGUAL_COMPENSATION: RegExp[] = [
  /\b(?:sueldo|salario|salaire|gehalt|salario|salario|stipendio|tanakhwah)\b|\b(?:cuanto|combien|wie ?viel|quanto|kitna|kitni)\b.{0,25}\b(?:gana|cobra|gagne|verdient|ganha|guadagna|kamata|kamati|kamate|kamaata)\b/,
  /\bsalary kitn[aie]\b|\bkitn[aie] (?:paise|paisa|salary)\b/,
  /зарплат|сколько зарабатывает|工资|薪水|年収|給料|راتب|सैलरी|वेतन/,
];
const MULTILINGUAL_SENSITIVE: RegExp[] = [
  /\b(?:donde vive|ou habite|wo wohnt|onde mora|dove abita|kahan reh(?:ta|ti|te))\b/,
  /\b(?:numero de telefono|numero de telephone|telefonnummer|numero de telefone|numero di telefono|phone number (?:do|dedo|batao))\b/,
  /\b(?:cuantos anos tiene|quel age a|wie alt ist|quantos anos (?:tem|o)|quanti anni ha|umar kitni)\b/,
  /\b(?:direccion|adresse|endereco|indirizzo) (?:de casa|personnelle|residencial|di casa|privee)\b|\bendereco residencial\b|\bghar kahan\b/,
  /住在哪|电话号码|住んで|電話番号|يسكن|رقم هاتف|где живёт|где живет|номер телефона|कहाँ रहते|फ़ोन नंबर/,
];
const MULTILINGUAL_EXPLICIT: RegExp[] = [
  /\b(?:erotic[ao]s?|erotique|erotische?n?|sexo|sexuel(?:le)?s?|sexuelle|sesso|nud[oae]s?|desnud[oa]s?|nackt\w*|nue?s|nuas?|porno|versaut\w*|sacanagem|gandi baat\w*|nangi)\b/,
  /эротич|голые|порн|色情|裸照|エロ|裸の|جنسية|عارية|कामुक|नंगी/,
];

/**
 * Strips accents from Latin letters only: in Cyrillic (`й`) and Devanagari
 * (vowel signs) the marks are part of the word the multilingual rules spell.
 */
function deAccent(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/(\p{Script=Latin})\p{M}+/gu, "$1")
    .normalize("NFC");
}

const rulesCache = new Map<string, Rules>();

function rulesFor(subject: PreRouterSubject): Rules {
  const key = `${subject.personName}\u0000${subject.assistantName}`;
  let rules = rulesCache.get(key);
  if (!rules) {
    rules = compileRules(subject);
    rulesCache.set(key, rules);
  }
  return rules;
}

const NORMAL: PreRouterDecision = { bypass: false, category: "normal", reason: "normal_rag" };

function anyMatch(patterns: RegExp[], texts: string[]): boolean {
  return patterns.some((pattern) => texts.some((text) => pattern.test(text)));
}

function classifyViews(
  texts: string[],
  rules: Rules,
  signals: Set<"injection" | "explicit"> = new Set(),
): PreRouterDecision {
  if (signals.has("injection") || anyMatch(rules.injection, texts))
    return { bypass: true, category: "prompt_injection", reason: "prompt_override_attempt" };
  if (signals.has("explicit") || anyMatch(rules.explicit, texts))
    return { bypass: true, category: "explicit", reason: "explicit_content" };
  if (anyMatch(rules.personhood, texts))
    return { bypass: true, category: "identity", reason: "personhood_confusion" };
  if (anyMatch(rules.assistant, texts))
    return { bypass: true, category: "identity", reason: "assistant_identity" };
  if (anyMatch(rules.compensation, texts))
    return { bypass: true, category: "private", reason: "compensation" };
  if (anyMatch(rules.sensitive, texts))
    return { bypass: true, category: "private", reason: "sensitive_personal_data" };
  const hasTokens = texts.some((text) => text.trim().length > 0);
  const aboutPortfolio = texts.some((text) => rules.portfolioTerms.test(text));
  if (hasTokens && !aboutPortfolio && anyMatch(rules.offTopic, texts))
    return { bypass: true, category: "off_topic", reason: "unsupported_topic" };
  return NORMAL;
}

/**
 * Whether a question names the person or a portfolio subject (projects,
 * skills, work, ...): such a question is never refused as off-topic.
 */
export function mentionsPortfolio(question: string, subject: PreRouterSubject): boolean {
  const rules = rulesFor(subject);
  return buildViews(question).texts.some((text) => rules.portfolioTerms.test(text));
}

/** Decides whether a question is answered by a canned reply (bypass) or goes to retrieval. */
export function preRoute(question: string, subject: PreRouterSubject): PreRouterDecision {
  const rules = rulesFor(subject);
  const plain = deAccent(foldCharacters(question));
  if (MARKUP.test(question) || MULTILINGUAL_INJECTION.some((pattern) => pattern.test(plain)))
    return { bypass: true, category: "prompt_injection", reason: "prompt_override_attempt" };
  if (MULTILINGUAL_EXPLICIT.some((pattern) => pattern.test(plain)))
    return { bypass: true, category: "explicit", reason: "explicit_content" };
  if (MULTILINGUAL_COMPENSATION.some((pattern) => pattern.test(plain)))
    return { bypass: true, category: "private", reason: "compensation" };
  if (MULTILINGUAL_SENSITIVE.some((pattern) => pattern.test(plain)))
    return { bypass: true, category: "private", reason: "sensitive_personal_data" };
  const decision = classifyViews(buildViews(question).texts, rules, spelledSignals(question));
  if (decision.bypass) return decision;
  // Anything a question hides in base64 is an instruction smuggled past the
  // rules above, whatever it says, as long as it classifies as non-normal
  // or reads like a command.
  for (const payload of decodeBase64(question)) {
    const hidden = classifyViews(buildViews(payload).texts, rules);
    if (
      hidden.bypass ||
      /\b(you|your|ignore|answer|reply|respond|say|tell|reveal|print)\b/i.test(payload)
    )
      return { bypass: true, category: "prompt_injection", reason: "prompt_override_attempt" };
  }
  return decision;
}
