/**
 * The forecast page's only stylesheet, served by the Worker itself: the
 * Content-Security-Policy allows styles from this origin and nothing inline,
 * so colours that depend on data are classes here (the SVG's colours are
 * presentation attributes, which the policy does not govern).
 */
import { AQI_CATEGORIES } from "../domain/categories.ts";
import { CATEGORY_COLOURS } from "./chart.ts";

export function categoryClass(label: string): string {
  return `cat-${label.toLowerCase().replace(/[^a-z]+/g, "-")}`;
}

const categoryRules = AQI_CATEGORIES.map(
  (category) => `.${categoryClass(category.label)}{background:${CATEGORY_COLOURS[category.label]}}`,
).join("\n");

export const FORECAST_CSS = `
:root{--ink:#16181d;--muted:#4d515b;--line:#d5d8de;--bg:#f6f7f9;--panel:#fff;--accent:#1f4fd1;--bad:#a1151b;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
*{box-sizing:border-box}body{margin:0;line-height:1.45}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,[tabindex]:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem;z-index:9}.skip:focus{left:.5rem}
.top{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center;justify-content:space-between;padding:.6rem 1rem;background:#0f1b3d;color:#fff}
.top a{color:#fff}.brand{font-weight:700}.top ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0}
main{max-width:60rem;margin:0 auto;padding:1rem 1rem 3rem}main:focus{outline:none}
h1{font-size:1.5rem;margin:.4rem 0 .6rem}h2{font-size:1.2rem;margin:0 0 .7rem}
.lead{margin:0 0 1rem;max-width:46rem}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:1rem;margin:0 0 1rem}
form{display:grid;gap:.9rem}
.field{display:flex;flex-direction:column;gap:.25rem;min-width:0}
label,legend{font-weight:600;font-size:.95rem}
fieldset{border:1px solid var(--line);border-radius:6px;padding:.6rem .9rem .9rem;margin:0;min-width:0}
.weather{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.7rem}
.inline{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end}
input,select,textarea{font:inherit;padding:.4rem .5rem;border:1px solid #767b85;border-radius:4px;background:#fff;color:var(--ink);max-width:100%}
textarea{width:100%;min-height:9rem;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
input[type=file]{padding:.3rem 0;border:0}
button{font:inherit;font-weight:600;padding:.5rem 1.1rem;border-radius:4px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;justify-self:start}
.hint{color:var(--muted);font-size:.88rem;margin:0}
.field-error{color:var(--bad);font-size:.9rem;margin:0;padding-left:1.1rem}
.invalid input,.invalid select,.invalid textarea{border:2px solid var(--bad)}
.error-summary{border:2px solid var(--bad);background:#fdecea;border-radius:6px;padding:.8rem 1rem;margin:0 0 1rem}
.error-summary h2{color:var(--bad);font-size:1.05rem}.error-summary ul{margin:0;padding-left:1.2rem}
.notes{color:var(--muted);font-size:.9rem;padding-left:1.2rem}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3rem 1rem;margin:0 0 1rem}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
figure{margin:0 0 1rem}
.chart{display:block;width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:6px}
.chart text{fill:var(--ink);font-size:12px}.chart .band-label{fill:var(--muted)}
figcaption{font-size:.88rem;color:var(--muted);margin-top:.4rem}
.legend{display:flex;flex-wrap:wrap;gap:.3rem .9rem;list-style:none;margin:.4rem 0 0;padding:0}
.swatch{display:inline-block;width:.85rem;height:.85rem;border:1px solid var(--ink);border-radius:2px;vertical-align:-.1rem;margin-right:.3rem}
.swatch.interval{background:#1f2a44;opacity:.35}
.table-wrap{overflow-x:auto;background:var(--panel);border:1px solid var(--line);border-radius:6px;margin-bottom:1rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}caption{text-align:left;padding:.6rem .8rem;font-weight:600}
th,td{padding:.4rem .7rem;border-top:1px solid var(--line);text-align:left;white-space:nowrap}th{background:#eef0f4}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
footer{max-width:60rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.88rem}
@media (max-width:480px){main{padding:.8rem .7rem 2rem}.panel{padding:.8rem}th,td{padding:.35rem .45rem}}
@media (max-width:600px){.chart text{font-size:20px}}
${categoryRules}
`;
