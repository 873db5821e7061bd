/**
 * Product text speaks of the product: docs, code comments, test names and
 * data descriptions never point at the project's tracker or at how the work
 * was organised. Readers cannot see the tracker, and such notes go stale;
 * the history belongs in commit messages.
 */

export interface ProductTextRule {
  name: string;
  pattern: RegExp;
}

export const PRODUCT_TEXT_RULES: ProductTextRule[] = [
  { name: "tracker reference", pattern: /\bissues? ?#?\d+/i },
  { name: "tracker reference", pattern: /\b(?:fixes|closes|see|per|resolves) #\d+\b/i },
  { name: "branch name", pattern: /\bs\d+-(?:\d+[a-z]?|e2e)\b/ },
  { name: "branch name", pattern: /\b(?:this|that|the other|a feature) branch\b/i },
  { name: "note on how the work was done", pattern: /\bother agents?\b|\bagents'/i },
  { name: "note on how the work was done", pattern: /\b(?:second|third|fourth|fifth) round\b/i },
  { name: "note on how the work was done", pattern: /\bwork rounds?\b/i },
];

/** Files the check reads: text a reader of the product sees. */
export const PRODUCT_TEXT_FILES =
  /\.(?:md|ts|tsx|js|mjs|cjs|toml|json|jsonc|py|sql|html|css|sh|ya?ml)$|(?:^|\/)\.ci\/run$|\.dev\.vars\.example$/;

/** Generated files, and this check's own rules and examples. */
export const PRODUCT_TEXT_EXEMPT =
  /(?:^|\/)package-lock\.json$|(?:^|\/)worker-configuration\.d\.ts$|^scripts\/lib\/product-text(?:\.test)?\.ts$/;

export interface ProductTextFinding {
  file: string;
  line: number;
  rule: string;
  text: string;
}

export function productTextFindings(file: string, content: string): ProductTextFinding[] {
  const findings: ProductTextFinding[] = [];
  content.split("\n").forEach((text, index) => {
    for (const rule of PRODUCT_TEXT_RULES) {
      if (rule.pattern.test(text)) {
        findings.push({ file, line: index + 1, rule: rule.name, text: text.trim().slice(0, 160) });
        break;
      }
    }
  });
  return findings;
}
