/**
 * The console's only stylesheet and script, served by the Worker itself
 * (no CDN, nothing from another origin). The script is progressive
 * enhancement: every page works without it.
 */

export const CONSOLE_CSS = `
:root{--ink:#16181d;--muted:#50545e;--line:#d5d8de;--bg:#f6f7f9;--panel:#fff;--accent:#1f4fd1;--bad:#a1151b;--good:#11693a;--warn:#7a4a00;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
*{box-sizing:border-box}.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}body{margin:0;line-height:1.45;min-height:100vh;display:flex;flex-direction:column}
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,[tabindex]:focus-visible{outline:3px solid #f2a900;outline-offset:2px}
.skip{position:absolute;left:-999px;top:0;background:#fff;padding:.5rem}.skip:focus{left:.5rem;z-index:9}
.top{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;justify-content:space-between;padding:.6rem 1rem;background:#0f1b3d;color:#fff}
.top a,.top label,.top .email,.top .tenant-name{color:#fff}.brand{font-weight:700;text-decoration:none}
.who{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}.who form{display:flex;gap:.4rem;align-items:center;margin:0}
.frame{flex:1 0 auto;display:flex;align-items:stretch}
nav.sidebar{flex:0 0 13rem;padding:1rem;background:var(--panel);border-right:1px solid var(--line)}
.phone-menu{display:none}.phone-menu summary{cursor:pointer;font-weight:600;padding:.6rem 1rem}.phone-menu nav{padding:0 1rem .6rem}
nav ul{list-style:none;margin:0 0 1rem;padding:0}nav li a{display:block;padding:.35rem .5rem;border-radius:4px;text-decoration:none}
nav a[aria-current=page]{background:#e3e9fb;font-weight:600}
.nav-title{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin:.4rem 0}
main{flex:1 1 20rem;min-width:0;padding:1rem 1.5rem 3rem}main:focus{outline:none}
h1{font-size:1.5rem;margin:.2rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .6rem}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:1rem;margin:0 0 1rem}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));gap:1rem;margin-bottom:1rem}
.card{background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:.8rem 1rem}.card .label{color:var(--muted);font-size:.85rem}.card .value{font-size:1.3rem;font-weight:600}
.table-wrap{position:relative;overflow-x:auto;background:var(--panel);border:1px solid var(--line);border-radius:6px;margin-bottom:1rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}caption{text-align:left;padding:.6rem .8rem;font-weight:600}
th,td{padding:.45rem .8rem;border-top:1px solid var(--line);text-align:left;vertical-align:top}th{background:#eef0f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
form.inline{display:inline}.form-title{flex-basis:100%;font-size:1rem;margin:0}
form.stack{display:grid;gap:.6rem;max-width:34rem}form.row{display:flex;flex-wrap:wrap;gap:.6rem;align-items:flex-end}
label{font-weight:600;font-size:.9rem}.field{display:flex;flex-direction:column;gap:.2rem}
input,select,textarea{font:inherit;padding:.4rem .5rem;border:1px solid #8a8f99;border-radius:4px;background:#fff;color:var(--ink)}
button{font:inherit;padding:.4rem .9rem;border-radius:4px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
button.secondary{background:#fff;color:var(--accent)}button.danger{background:var(--bad);border-color:var(--bad)}
button[aria-busy=true]{opacity:.7;cursor:progress}
.notice{background:#e6f4ea;border:1px solid #9bd0ab;color:#0b4d27;padding:.6rem .8rem;border-radius:4px}
.error{background:#fdecea;border:1px solid #f0a9a4;color:var(--bad);padding:.6rem .8rem;border-radius:4px}
.empty{color:var(--muted);font-style:italic}.hint{color:var(--muted);font-size:.88rem}
.secret{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;background:#fff8e1;border:1px solid #e0c068;padding:.7rem;border-radius:4px}
.secret code{font-size:1rem;word-break:break-all}pre.command{background:#0f1b3d;color:#fff;padding:.7rem;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85rem}
.badge{display:inline-block;padding:.05rem .45rem;border-radius:999px;font-size:.78rem;font-weight:600;background:#e8eaef;color:#2b2f38}
.badge-active,.badge-paid,.badge-succeeded,.badge-delivered,.badge-aggregated,.badge-resolved,.badge-trialing{background:#dff3e6;color:var(--good)}
.badge-void,.badge-revoked,.badge-failed,.badge-rejected,.badge-disabled,.badge-dead,.badge-past-due,.badge-cancelled{background:#fbe3e1;color:var(--bad)}
.badge-open,.badge-pending,.badge-draft,.badge-paused,.badge-retrying{background:#fff1d6;color:var(--warn)}
.usage-meter{display:block;width:100%;height:.9rem;margin:.3rem 0}ul.plain{list-style:none;padding:0}
.chart{width:100%;height:auto;max-height:22rem;background:var(--panel);border:1px solid var(--line);border-radius:6px}
.chart .bar{fill:var(--accent)}.chart text{fill:var(--muted);font-size:11px}.chart .grid{stroke:var(--line)}.chart .tick{stroke:var(--muted)}
.chart-figure{margin:0}ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;padding:0;margin:.5rem 0}ul.legend li{display:flex;align-items:center;gap:.4rem}
@media (min-width:641px) and (max-width:1016px){.chart text{font-size:16px}}@media (min-width:641px) and (max-width:800px){.chart text{font-size:22px}}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0}dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
@media (max-width:640px){.frame{flex-direction:column}nav.sidebar{display:none}
.phone-menu{display:block;background:var(--panel);border-bottom:1px solid var(--line)}
.phone-menu ul{display:flex;flex-wrap:wrap;gap:.2rem .6rem;margin-bottom:.4rem}main{padding:1rem;flex:1 0 auto}.top{padding:.5rem}
.table-wrap table,.table-wrap tbody,.table-wrap tr,.table-wrap td{display:block}.table-wrap thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.table-wrap tr{border-top:1px solid var(--line);padding:.35rem 0}.table-wrap td{border:0;padding:.15rem .8rem;display:grid;grid-template-columns:7rem minmax(0,1fr);gap:.6rem;text-align:left}
.table-wrap td::before{content:attr(data-label);font-weight:600;color:var(--muted)}.table-wrap td[data-label=""]{display:block}.table-wrap td[data-label=""]::before{content:none}
.table-wrap td.num{text-align:left}.table-wrap code{overflow-wrap:anywhere}.table-wrap caption{display:block}.table-wrap td>.badge,.table-wrap td>form,.table-wrap td>button{justify-self:start}
.chart text{font-size:26px}.chart .minor{display:none}}@media (max-width:359px){.chart text{font-size:30px}}
`;

export const CONSOLE_JS = `
(function(){
  document.addEventListener("click", function(event){
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy") + "-status");
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function(){
      if (status) status.textContent = "Copied to the clipboard.";
    }, function(){
      if (status) status.textContent = "Copying failed: select the text and copy it by hand.";
    });
  });
  document.addEventListener("submit", function(event){
    var form = event.target;
    var question = form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); return; }
    var button = form.querySelector("button[type=submit],button:not([type])");
    if (button && form.method.toLowerCase() === "post") {
      // A second click would send the same Idempotency-Key; say that work is under way.
      setTimeout(function(){ button.disabled = true; button.setAttribute("aria-busy", "true"); button.textContent = "Working…"; }, 0);
    }
  });
  document.addEventListener("change", function(event){
    var form = event.target.form;
    if (form && form.hasAttribute("data-autosubmit")) form.requestSubmit();
  });
  document.querySelectorAll("form[data-autosubmit] button[type=submit]").forEach(function(b){ b.hidden = true; });
  // A percent threshold needs a limit or included amount: offer it only for features that have one.
  function percentChoice(select){
    var type = select.form && select.form.querySelector("select[name=type]");
    var percent = type && type.querySelector("option[value=percent]");
    if (!percent) return;
    var capped = select.selectedOptions[0] && select.selectedOptions[0].getAttribute("data-capped") === "true";
    percent.disabled = !capped;
    if (!capped && type.value === "percent") type.value = "units";
  }
  document.querySelectorAll("select[data-percent-for]").forEach(function(select){
    percentChoice(select);
    select.addEventListener("change", function(){ percentChoice(select); });
  });
})();
`;
