//! The console's page: every section rendered in one HTML document with its stylesheet and the
//! few lines of script that refresh each section from `/console/section/NAME`. Nothing is
//! fetched from elsewhere: it works offline.

use std::fmt::Write;

use super::Section;

/// How often the page asks for a section again (ms).
pub const REFRESH_MS: u32 = 2000;

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2330;background:#f4f5f7}\
header{background:#1d2330;color:#fff;padding:.6em 1.2em;display:flex;gap:1em;align-items:baseline}\
header h1{font-size:1.2em;margin:0}header small{opacity:.7}\
main{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1em;padding:1em}\
section{background:#fff;border-radius:6px;padding:.6em 1em;box-shadow:0 1px 2px #0002;overflow-x:auto}\
section.stale{opacity:.55}section#traffic{grid-column:1/-1}h2{font-size:1.05em;margin:.2em 0 .5em}h3{font-size:.95em;margin:.8em 0 .3em}\
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e5ea;vertical-align:top}\
th{font-weight:600;font-size:.85em;color:#555}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}td.pool{white-space:nowrap}\
tr.bad td,.bad{color:#b00020}tr.bad td:first-child{border-left:4px solid #b00020}.ok{color:#17692e}\
.warn{color:#a05a00}.err{color:#b00020}.none,.more{color:#666;font-style:italic}\
.bar{display:inline-block;position:relative;width:120px;height:10px;background:#e3e5ea;border-radius:3px;vertical-align:middle;overflow:hidden}\
.bar .fill{position:absolute;left:0;top:0;bottom:0;background:#3b6fd6}\
.bar .mark{position:absolute;top:0;bottom:0;width:2px;background:#d6903b}\
.buf{display:flex;gap:.5em;align-items:center;font-size:.85em}.buf .lbl{width:4.5em;color:#555}\
.buf.standby .fill{background:#8aa7e0}\
svg.chart{display:block;background:#f8f9fb}svg.chart polyline{fill:none;stroke:#3b6fd6;stroke-width:1.5}\
svg.chart text{font-size:9px;fill:#666}progress{width:120px;vertical-align:middle}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:0}dt{color:#555}dd{margin:0}\
ul.checks{margin:0;padding-left:1.2em}code{font-size:.9em;word-break:break-all}";

/// Refreshes every section on its own, one request in flight per section; a section whose
/// refresh fails is dimmed until the next one succeeds.
const SCRIPT: &str = "\
'use strict';\
(function(){\
var every=+document.body.dataset.refresh||2000;\
document.querySelectorAll('section[data-section]').forEach(function(s){\
var busy=false;\
setInterval(function(){\
if(busy)return;busy=true;\
fetch('/console/section/'+s.dataset.section,{cache:'no-store',credentials:'same-origin'})\
.then(function(r){if(!r.ok)throw new Error('HTTP '+r.status);return r.text();})\
.then(function(t){s.innerHTML=t;s.classList.remove('stale');s.dataset.refreshed=Date.now();})\
.catch(function(){s.classList.add('stale');})\
.then(function(){busy=false;});\
},every);\
});\
})();";

/// The whole page, from each section's rendered fragment.
pub fn render(sections: &[(Section, String)]) -> String {
    let body: usize = sections.iter().map(|(_, f)| f.len()).sum();
    let mut out = String::with_capacity(body + STYLE.len() + SCRIPT.len() + 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>idgate console</title><link rel=\"icon\" href=\"data:,\">\
         <style>{STYLE}</style></head><body data-refresh=\"{REFRESH_MS}\">\
         <header><h1>idgate console</h1><small>refreshed every {} s</small></header><main>",
        REFRESH_MS / 1000
    );
    for (s, fragment) in sections {
        let _ = write!(
            out,
            "<section id=\"{0}\" data-section=\"{0}\">{fragment}</section>",
            s.name()
        );
    }
    let _ = write!(out, "</main><script>{SCRIPT}</script></body></html>");
    out
}
