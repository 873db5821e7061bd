/**
 * Architecture rules for workers/ and shared/, checked by dependency-cruiser:
 *
 *   npm run check:deps      (depcruise workers shared --config .dependency-cruiser.cjs)
 *
 * Every rule is severity "error": a violation prints `rule: from → to` and
 * makes the command exit non-zero.
 *
 * Parser: swc (@swc/core). The repo is on typescript@7 (the Go port), which
 * has no JavaScript compiler API, so dependency-cruiser's "tsc" parser and its
 * tsconfig reading are unavailable (it only accepts typescript <7). swc parses
 * the .ts sources themselves, so it sees every import, including
 * `import type` / `export type` (marked with the dependency type "type-only").
 * `tsPreCompilationDeps` is left off on purpose: with swc it changes nothing
 * and setting it only makes dependency-cruiser warn that tsc is missing.
 * Imports are resolved by enhanced-resolve: `./foo.ts` as written, and
 * `@edge-platform/shared/…` through the workspace symlink in node_modules and
 * shared/package.json "exports" ("./*" → "./src/*.ts"). No tsconfig has
 * `paths` or `baseUrl`, so no tsConfig option is needed.
 *
 * Type-only imports count for cycles and the capability boundary: a cycle
 * or boundary crossing through `import type` is still a design dependency.
 * The pure rules count only imports that load a module at run time
 * (PURE_RULES_COUNT_TYPE_ONLY below): a rule may name a row type, as a type
 * import does no I/O.
 *
 * Scope: every .ts file under workers/ and shared/, tests included (they take
 * part in no cycle today), plus what they import elsewhere in the repo;
 * generated *.d.ts files are skipped. npm packages and node_modules are
 * recorded but not followed.
 */

// ---------------------------------------------------------------------------
// Pure rules: which modules must stay free of I/O, and what counts as I/O.
// Adjust these two lists when the convention settles.
// ---------------------------------------------------------------------------

/** Modules that hold pure rules (regexes on the path from the repo root). */
const PURE_MODULES = [
  "^workers/billing/src/[^/]+/rules/", // a rules/ folder inside a capability
  "^workers/billing/src/[^/]+/[^/]+[.]rules[.]ts$", // <capability>/<name>.rules.ts
  "^workers/[^/]+/src/domain/", // a worker's domain/ folder
  // a domain/ folder inside a billing capability: the move into capability
  // folders creates these (audit/domain/, credits/domain/, platform/domain/, …)
  "^workers/billing/src/[^/]+/domain/",
];

/** What pure modules may not import (regexes on the resolved path). */
const IO_MODULES = [
  // npm packages that do I/O (resolved into node_modules, or unresolved)
  "(^|/)node_modules/(drizzle-orm|hono)/",
  "^(drizzle-orm|hono)(/|$)",
  // the workerd runtime modules
  "^cloudflare:",
  // local files whose name or folder says storage, db, routes, service(s),
  // durable-object(s) or job(s)
  "^(workers|shared)/.*[/._-](storage|db|routes|services?|durable-objects?|jobs?)([/._-]|$)",
  // the shared D1 client (also covered by the db/ pattern above)
  "^shared/src/db/client[.]ts$",
];

/**
 * Declarations that match IO_MODULES by folder but do no I/O: the drizzle
 * table definitions and the enum value lists beside them. Rules may use the
 * value lists (roles, statuses); a query still needs db/client or drizzle-orm.
 */
const DECLARATIONS = ["^shared/src/db/schema/"];

/**
 * Whether `import type` from an I/O module breaks the pure rules. true: it
 * does (the rule is about dependencies). false: only imports that load the
 * module at run time count.
 */
const PURE_RULES_COUNT_TYPE_ONLY = false;

// ---------------------------------------------------------------------------
// Billing capabilities: workers/billing/src/<capability>/ with an index.ts.
// ---------------------------------------------------------------------------
const BILLING_SRC = "^workers/billing/src/";
const CAPABILITY = `${BILLING_SRC}[^/]+/`; // any file inside a capability folder
const CAPABILITY_INDEX = `${BILLING_SRC}[^/]+/index[.]ts$`;
const BILLING_ROOT_FILE = `${BILLING_SRC}[^/]+[.]ts$`; // index.ts, app.ts, …

/**
 * Which capabilities each billing capability may import (each capability's
 * README says the same). Lower layers first; a capability never imports one
 * that imports it, so the capabilities form a graph without cycles.
 */
const CAPABILITY_IMPORTS = {
  platform: [],
  audit: ["platform"],
  identity: ["platform", "audit"],
  pricing: ["platform", "audit"],
  catalog: ["platform", "audit", "pricing"],
  notifications: ["platform", "audit", "catalog"],
  usage: ["platform", "audit"],
  subscriptions: ["platform", "audit", "identity", "pricing", "catalog", "notifications"],
  payments: ["platform", "audit", "notifications"],
  invoicing: ["platform", "audit", "pricing", "notifications", "subscriptions", "payments"],
  credits: [
    "platform",
    "audit",
    "pricing",
    "notifications",
    "subscriptions",
    "payments",
    "invoicing",
  ],
  entitlements: ["platform", "pricing", "catalog", "notifications", "usage", "credits"],
  "credit-notes": ["platform", "audit", "notifications", "payments", "invoicing"],
  console: ["platform", "invoicing", "notifications"],
};

/** One rule per capability: its imports of other capabilities stay within CAPABILITY_IMPORTS. */
const capabilityLayerRules = Object.entries(CAPABILITY_IMPORTS).map(([capability, allowed]) => ({
  name: `capability-imports-${capability}`,
  severity: "error",
  comment: `${capability} may import only ${allowed.join(", ") || "shared/"} (CAPABILITY_IMPORTS in .dependency-cruiser.cjs and its README).`,
  from: { path: `${BILLING_SRC}${capability}/` },
  to: {
    path: CAPABILITY,
    pathNot: [`${BILLING_SRC}(${[capability, ...allowed].join("|")})/`],
  },
}));

/** A capability folder that CAPABILITY_IMPORTS does not list fails until it is given its place. */
const unlistedCapabilityRule = {
  name: "capability-listed",
  severity: "error",
  comment: "A new billing capability is listed in CAPABILITY_IMPORTS with what it may import.",
  from: {
    path: CAPABILITY,
    pathNot: `${BILLING_SRC}(${Object.keys(CAPABILITY_IMPORTS).join("|")})/`,
  },
  to: {},
};

/** Runtime modules of workerd and the vitest pool; they resolve like node builtins. */
const CLOUDFLARE_MODULES = [
  "cloudflare:workers",
  "cloudflare:test",
  "cloudflare:email",
  "cloudflare:sockets",
  "cloudflare:node",
  "cloudflare:pipelines",
  "cloudflare:workflows",
  "cloudflare:durable-objects",
];

// depcruise exits with the number of errors as its exit code, and exit codes
// wrap at 256: exactly 256 (or 512, …) violations would exit 0 and pass.
// Keep any count above 255 at 255 so the check always fails on errors.
process.on("exit", (code) => {
  if (code > 255) process.exitCode = 255;
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...capabilityLayerRules,
    unlistedCapabilityRule,
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Import cycle. Counts type-only imports too. Break it by moving the shared piece into a module both sides import.",
      from: {},
      to: { circular: true },
    },
    {
      name: "capability-via-index",
      severity: "error",
      comment:
        "A billing capability imports another capability only through that capability's index.ts (workers/billing/src/<capability>/index.ts).",
      from: { path: `${BILLING_SRC}([^/]+)/` },
      to: {
        path: CAPABILITY,
        pathNot: [`${BILLING_SRC}$1/`, CAPABILITY_INDEX],
      },
    },
    {
      name: "root-via-index",
      severity: "error",
      comment:
        "Files directly in workers/billing/src/ (index.ts, app.ts, the composition root) import a capability only through its index.ts.",
      from: { path: BILLING_ROOT_FILE },
      to: { path: CAPABILITY, pathNot: CAPABILITY_INDEX },
    },
    {
      name: "capability-not-to-root",
      severity: "error",
      comment:
        "A billing capability does not import the worker's root files (workers/billing/src/*.ts); the root composes the capabilities, not the other way round.",
      from: { path: CAPABILITY },
      to: { path: BILLING_ROOT_FILE },
    },
    {
      name: "pure-no-io",
      severity: "error",
      comment:
        "Pure rules (domain/, <capability>/rules/, *.rules.ts) do no I/O: no drizzle-orm, hono, cloudflare:*, storage/db/routes/service/durable-object/job modules. See PURE_MODULES and IO_MODULES at the top of .dependency-cruiser.cjs.",
      from: { path: PURE_MODULES, pathNot: "[.]test[.]ts$" },
      to: {
        path: IO_MODULES,
        pathNot: DECLARATIONS,
        ...(PURE_RULES_COUNT_TYPE_ONLY ? {} : { dependencyTypesNot: ["type-only"] }),
      },
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment:
        "An import that does not resolve to a file, npm package or runtime module. Keeps the checks above honest: an unresolved import would hide cycles and boundary crossings. A new cloudflare:* module goes into CLOUDFLARE_MODULES.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    parser: "swc",
    tsPreCompilationDeps: false,
    combinedDependencies: true,
    doNotFollow: { path: "(^|/)node_modules/" },
    exclude: { path: "^(workers|shared)/.*[.]d[.]ts$" },
    builtInModules: { add: CLOUDFLARE_MODULES },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default"],
      extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
      mainFields: ["module", "main", "types", "typings"],
    },
    skipAnalysisNotInRules: true,
  },
};
