/**
 * `npm run eval:answers`: asks every question of the answer evaluation set
 * (eval/answer-questions.{dev,test}.json, the development portfolio) through
 * the worker's own chat pipeline (local providers: lexical embeddings, the
 * D1 vector index, the extractive responder) and prints fact accuracy and
 * the false-answer rate (a not-stated question answered instead of
 * declined) for the dev and the held-out test split. Exits 1 when the test
 * split falls below the bars. `--misses` lists every wrong answer; `--json`
 * prints the reports as JSON.
 *
 * `--remote`: the same with Workers AI embeddings (needs CLOUDFLARE_ACCOUNT_ID
 * and CLOUDFLARE_API_TOKEN; without them it says so and exits 0), plus a
 * sweep of the relevance thresholds RETRIEVAL_MIN_SIMILARITY and
 * RETRIEVAL_STRONG_SIMILARITY on the dev split, reported on the test split.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { type Answerer, createAnswerer } from "./lib/answer-harness.ts";
import {
  type AnswerOutcome,
  type AnswerQuestion,
  type SplitReport,
  scoreOutcome,
  summarize,
} from "./lib/answer-scoring.ts";
import { RestAiRunner, remoteAccount } from "./lib/rest-ai.ts";

const MIN_FACT_ACCURACY = 0.95;
const MAX_FALSE_ANSWERS = 0;

const args = new Set(process.argv.slice(2));

function loadSplit(split: "dev" | "test"): AnswerQuestion[] {
  const file = path.join(import.meta.dirname, `answer-questions.${split}.json`);
  return (JSON.parse(readFileSync(file, "utf8")) as { questions: AnswerQuestion[] }).questions;
}

async function evaluate(answerer: Answerer, questions: AnswerQuestion[]): Promise<SplitReport> {
  const outcomes: AnswerOutcome[] = [];
  for (const question of questions)
    outcomes.push(scoreOutcome(question, (await answerer.ask(question.question)).text));
  return summarize(outcomes);
}

const pct = (value: number) => `${(value * 100).toFixed(1)}%`;

function printReport(name: string, report: SplitReport) {
  console.log(
    `${name.padEnd(5)} ${String(report.questions).padStart(4)} questions | fact accuracy ${pct(report.factAccuracy).padStart(6)} (${report.factCorrect}/${report.factQuestions}, ${report.factDeclined} wrongly declined) | false answers ${report.falseAnswers}/${report.notStated} (${pct(report.falseAnswerRate)})`,
  );
}

function printMisses(name: string, report: SplitReport) {
  for (const miss of report.misses) {
    const expected =
      miss.question.answer === "not_stated" ? "decline" : `facts ${JSON.stringify(miss.missing)}`;
    console.log(`  [${name} ${miss.question.id} ${miss.question.kind}] ${miss.question.question}`);
    console.log(`      expected ${expected}; got: ${miss.text.replace(/\s+/g, " ").slice(0, 240)}`);
  }
}

// `--ask "question" ...`: answers ad-hoc questions through the same pipeline (no scoring).
const askIndex = process.argv.indexOf("--ask");
if (askIndex >= 0) {
  const answerer = await createAnswerer();
  for (const question of process.argv.slice(askIndex + 1)) {
    const answer = await answerer.ask(question);
    console.log(
      `Q: ${question}\nA: ${answer.text}\n   [${answer.route}${answer.gateReason ? ` ${answer.gateReason}` : ""}; sources: ${answer.sources.map((s) => s.title).join(", ") || "none"}]\n`,
    );
  }
  process.exit(0);
}

const dev = loadSplit("dev");
const test = loadSplit("test");

if (args.has("--remote")) {
  const account = remoteAccount(process.env);
  if ("missing" in account) {
    console.log(
      `eval:answers --remote skipped: no Cloudflare account configured (set ${account.missing.join(" and ")}). Nothing was measured; the local evaluation is \`npm run eval:answers\`.`,
    );
    process.exit(0);
  }
  // Thresholds from the environment (e.g. the values in [env.production.vars]), else the defaults.
  const answerer = await createAnswerer({
    ai: new RestAiRunner(account.accountId, account.apiToken),
    env: process.env,
  });
  const configured = { dev: await evaluate(answerer, dev), test: await evaluate(answerer, test) };
  console.log(
    `Workers AI embeddings (${process.env.EMBEDDING_MODEL ?? "@cf/baai/bge-base-en-v1.5"}), configured thresholds:`,
  );
  printReport("dev", configured.dev);
  printReport("test", configured.test);
  // Sweep on dev only; the test split reports the chosen pair.
  let best: { min: number; strong: number; report: SplitReport } | null = null;
  for (let min = 0.3; min <= 0.86; min += 0.04)
    for (let strong = min + 0.04; strong <= 0.95; strong += 0.04) {
      const report = await evaluate(
        answerer.withThresholds({ minSimilarity: min, strongSimilarity: strong }),
        dev,
      );
      const better =
        !best ||
        report.falseAnswers < best.report.falseAnswers ||
        (report.falseAnswers === best.report.falseAnswers &&
          report.factAccuracy > best.report.factAccuracy);
      if (better) best = { min, strong, report };
    }
  if (best) {
    const chosen = answerer.withThresholds({
      minSimilarity: best.min,
      strongSimilarity: best.strong,
    });
    console.log(
      `\nbest on dev: RETRIEVAL_MIN_SIMILARITY=${best.min.toFixed(2)} RETRIEVAL_STRONG_SIMILARITY=${best.strong.toFixed(2)}`,
    );
    printReport("dev", best.report);
    printReport("test", await evaluate(chosen, test));
  }
  process.exit(0);
}

// `--cache`: the response cache on (clients' default), so a cached answer to one question
// that another question reaches semantically would show up as a wrong answer.
const answerer = await createAnswerer({ useCache: args.has("--cache") });
const reports = { dev: await evaluate(answerer, dev), test: await evaluate(answerer, test) };
if (args.has("--json")) console.log(JSON.stringify(reports, null, 2));
else {
  console.log(
    "Answer evaluation (development portfolio, the worker's local pipeline: lexical embeddings, D1 vectors, extractive responder)\n",
  );
  printReport("dev", reports.dev);
  printReport("test", reports.test);
  console.log("\nper kind (dev + test): correct / total");
  const kinds = new Map<string, { total: number; correct: number }>();
  for (const report of [reports.dev, reports.test])
    for (const [kind, row] of Object.entries(report.byKind)) {
      const sum = kinds.get(kind) ?? { total: 0, correct: 0 };
      kinds.set(kind, { total: sum.total + row.total, correct: sum.correct + row.correct });
    }
  for (const [kind, row] of [...kinds].sort())
    console.log(`  ${kind.padEnd(18)} ${row.correct}/${row.total}`);
  if (args.has("--misses") || args.has("--misses=all")) {
    console.log("\nwrong answers:");
    printMisses("dev", reports.dev);
    // Tuning looks at dev only; `--misses=all` also lists the held-out split.
    if (process.argv.includes("--misses=all")) printMisses("test", reports.test);
  }
}

const failures: string[] = [];
if (reports.test.factAccuracy < MIN_FACT_ACCURACY)
  failures.push(
    `test fact accuracy ${reports.test.factAccuracy.toFixed(3)} < ${MIN_FACT_ACCURACY}`,
  );
if (reports.test.falseAnswers > MAX_FALSE_ANSWERS)
  failures.push(`test false answers ${reports.test.falseAnswers} > ${MAX_FALSE_ANSWERS}`);
if (failures.length > 0) {
  console.error(`\nFAILED: ${failures.join("; ")}`);
  process.exit(1);
}
