/**
 * The dashboard's one stylesheet, served by the binary itself (no external asset): phone first, a
 * second column on wide screens, dark by `prefers-color-scheme`. Every text colour keeps a contrast of
 * at least 4.5:1 on its background in both schemes.
 */
import { createHash } from 'node:crypto';

const css = `
:root{--bg:#f4f5f7;--card:#fff;--text:#1b1f24;--muted:#4b5563;--line:#c9ced6;--link:#0b57d0;--bar:#2f5fb3;
--ok:#166534;--warn:#8a4b00;--bad:#b42318;--button:#2f5fb3;--danger:#b42318;--button-text:#fff;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--card:#1b1f24;--text:#e8eaed;--muted:#aeb6c2;--line:#3d4450;
--link:#8ab4f8;--bar:#7aa7f5;--ok:#6ee7a0;--warn:#fbbf5e;--bad:#ff9b8f;--button:#8ab4f8;--danger:#ff9b8f;
--button-text:#111418}}
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0;background:var(--bg);color:var(--text);font-size:1rem;line-height:1.45}
a{color:var(--link)}:focus-visible{outline:3px solid var(--link);outline-offset:2px}
header{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem 1rem;padding:.75rem max(1rem,calc(50% - 35rem));
background:var(--card);border-bottom:1px solid var(--line)}
header .brand{font-weight:700;margin-right:auto;text-decoration:none;color:var(--text)}
header form{margin:0}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.45rem;margin:.25rem 0 .25rem;overflow-wrap:anywhere}h2{font-size:1.15rem;margin:0 0 .75rem}
section{background:var(--card);border:1px solid var(--line);border-radius:.6rem;padding:1rem;margin:0 0 1rem}
.muted{color:var(--muted)}.id{font-family:ui-monospace,monospace;font-size:.85rem;overflow-wrap:anywhere}
nav.tabs,nav.periods{display:flex;flex-wrap:wrap;gap:.5rem;margin:.5rem 0 1rem}
nav.tabs a,nav.periods a{padding:.45rem .8rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;
min-height:2.5rem;
display:inline-flex;align-items:center}
nav a[aria-current]{background:var(--text);color:var(--card);border-color:var(--text);font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0}dt{color:var(--muted)}dd{margin:0;
overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:.92rem;font-variant-numeric:tabular-nums}
caption{text-align:left;font-weight:600;padding:0 0 .4rem}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
td.n,th.n{text-align:right}
.scroll{overflow-x:auto;max-width:100%}
.long{max-height:24rem;overflow-y:auto}
.pair{display:grid;gap:1rem}
@media (min-width:56rem){.pair{grid-template-columns:minmax(0,3fr) minmax(0,2fr);align-items:start}}
.chart{width:100%;height:auto;display:block;margin:0 0 .5rem}
.chart text{fill:var(--text);font-size:16px}@media (min-width:40rem){.chart text{font-size:12px}}
.chart .unit{font-weight:700}
.chart .grid{stroke:var(--line);stroke-width:1}.chart .baseline{stroke:var(--muted);stroke-width:1}
.chart .bars rect{fill:var(--bar)}.chart .line{fill:none;stroke:var(--bar);stroke-width:2}
.chart .markers circle{fill:var(--bar)}
.status-ok{color:var(--ok);font-weight:600}.status-warn{color:var(--warn);font-weight:600}.status-bad{color:var(--bad);
font-weight:600}
.notice{padding:.75rem;border-radius:.5rem;border:2px solid var(--warn);margin:0 0 1rem}
label{display:block;margin:.5rem 0 .25rem;font-weight:600}
input[type=password]{width:100%;max-width:24rem;min-height:3rem;font-size:1.1rem;padding:.5rem;
border:1px solid var(--muted);border-radius:.5rem;
background:var(--card);color:var(--text)}
button{min-height:2.75rem;font-size:1rem;border:0;border-radius:.5rem;padding:.5rem 1rem;color:var(--button-text);
background:var(--button);cursor:pointer}
button.danger{background:var(--danger)}button.plain{background:transparent;color:var(--link);
border:1px solid var(--line)}
.signin{max-width:28rem;margin:2rem auto}
.signin button{margin-top:1rem;width:100%;max-width:24rem}
ul.links{margin:0;padding-left:1.2rem}ul.links li{margin:.3rem 0}
.cards{display:grid;gap:1rem;margin:0 0 1rem}
@media (min-width:56rem){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}}
.cards section{margin:0}
ul.devices{list-style:none;margin:0;padding:0;display:grid;gap:1rem}
@media (min-width:56rem){ul.devices{grid-template-columns:repeat(2,minmax(0,1fr))}}
ul.devices li{border:1px solid var(--line);border-radius:.5rem;padding:.75rem}ul.devices h3{font-size:1rem;
margin:0 0 .5rem;overflow-wrap:anywhere}
ul.devices form{margin:.75rem 0 0}
ul.sessions{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
@media (min-width:56rem){ul.sessions{grid-template-columns:repeat(3,minmax(0,1fr))}}
ul.sessions li{border:1px solid var(--line);border-radius:.5rem;padding:.75rem}
ul.sessions h3{font-size:1rem;margin:0 0 .5rem}
ul.sessions dl{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:.4rem 1rem}ul.sessions dl div{min-width:0}
figure{margin:0 0 .75rem}figcaption{font-weight:600;margin:0 0 .25rem}
`;

/** The stylesheet's text. */
export const DASHBOARD_CSS = css.trim();

/** Its address, named by its content so a browser may keep it for good and still gets a changed one. */
const cssHash = createHash('sha256').update(DASHBOARD_CSS).digest('hex').slice(0, 12);
export const STYLE_PATH = `/dashboard/style-${cssHash}.css`;
