"""The report page's own style sheet and hover script, and the Content-Security-Policy that allows only them.

Both are constants, so their SHA-256 hashes go into the policy: the browser runs no other script (a ``<script>``
smuggled in through a run string would not run even if it were not escaped), loads nothing from the network,
and submits no form. The page reads the same with scripts disabled: the script only adds hover readouts.
"""

from __future__ import annotations

import base64
import hashlib

STYLE = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#d6d6d6;--bg:#fafafa;--err:#b3261e;--warn:#8a5a00;--info:#0b57d0}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1180px;padding:12px 16px 40px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
h1{font-size:1.45em;margin:.3em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;padding-top:.6em;border-top:2px solid #333}
h3{font-size:1.05em;margin:1.3em 0 .35em}h4{font-size:.95em;margin:.9em 0 .3em;color:var(--muted)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
pre{white-space:pre-wrap;word-break:break-all;background:#f0f0f0;padding:6px 8px;border-radius:4px;margin:.3em 0}
.meta,.note,.muted{color:var(--muted)}.note{font-size:.92em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.3em 0;font-size:.93em}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eee;font-weight:600;white-space:nowrap}td.nw{white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:.4em 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.status{font-weight:600;padding:0 6px;border-radius:3px;border:1px solid currentColor;font-size:.85em}
.status-finished{color:#18794e}.status-crashed{color:var(--err)}.status-running{color:var(--info)}
.status-stopped{color:var(--warn)}.status-unknown{color:var(--muted)}
.sev{display:inline-block;min-width:4.6em;font-weight:700;text-transform:uppercase;font-size:.78em}
.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}.sev-info{color:var(--info)}
.finding{border-left:4px solid var(--line);padding:4px 10px;margin:.5em 0;background:#fff}
.finding.sev-error{border-color:var(--err)}.finding.sev-warning{border-color:#e0a100}.finding.sev-info{border-color:var(--info)}
.finding p{margin:.15em 0}.expl{white-space:pre-wrap;color:#333}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,520px),1fr));gap:10px}
figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:4px;padding:6px}
figcaption{font-size:.9em}
svg.chart,svg.timeline{width:100%;height:auto;display:block}
svg text{font:13px system-ui,sans-serif;fill:#333}svg text.mark{font-weight:700}
svg.timeline text{font-size:12px}
svg text.bandlabel{fill:#7a5b00}svg text.seamlabel{fill:#c00}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.88em;margin:2px 0}
.legend span{display:inline-flex;align-items:center;gap:4px}
svg.swatch{vertical-align:middle}
.readout{min-height:1.3em;font-size:.86em;color:var(--muted)}
nav.toc a,table a{color:var(--info)}
nav.toc{font-size:.9em;margin:.2em 0 .5em}
@media print{figure,.finding,tr{break-inside:avoid}nav.toc{display:none}}
@media (max-width:600px){body{padding:8px}dl.facts{grid-template-columns:minmax(4.5em,auto) 1fr;gap:2px 8px}svg.chart text{font-size:17px}}
""".strip()

SCRIPT = """
(function(){
  function pts(path){
    if(path._pts)return path._pts;
    var d=path.getAttribute('d')||'',out=[],re=/[ML]([-0-9.e]+) ([-0-9.e]+)/g,m;
    while((m=re.exec(d))!==null){out.push([parseFloat(m[1]),parseFloat(m[2])]);}
    path._pts=out;return out;
  }
  function nearest(list,x){
    var lo=0,hi=list.length-1;if(hi<0)return null;
    while(hi-lo>1){var mid=(lo+hi)>>1;if(list[mid][0]<x)lo=mid;else hi=mid;}
    return Math.abs(list[lo][0]-x)<=Math.abs(list[hi][0]-x)?list[lo]:list[hi];
  }
  function num(v){return Math.abs(v)>=1e6||(Math.abs(v)<1e-4&&v!==0)?v.toExponential(3):String(Number(v.toPrecision(5)));}
  var charts=document.querySelectorAll('svg.chart');
  for(var i=0;i<charts.length;i++){(function(svg){
    var fig=svg.closest('figure'),out=fig?fig.querySelector('.readout'):null;if(!out)return;
    var ds=svg.dataset,x0=+ds.x0,x1=+ds.x1,y0=+ds.y0,y1=+ds.y1,left=+ds.left,top=+ds.top,pw=+ds.pw,ph=+ds.ph;
    var cursor=document.createElementNS('http://www.w3.org/2000/svg','line');
    cursor.setAttribute('y1',top);cursor.setAttribute('y2',top+ph);cursor.setAttribute('stroke','#555');
    cursor.setAttribute('stroke-width','0.6');cursor.setAttribute('visibility','hidden');svg.appendChild(cursor);
    svg.addEventListener('mousemove',function(ev){
      var p=svg.createSVGPoint();p.x=ev.clientX;p.y=ev.clientY;
      var q=p.matrixTransform(svg.getScreenCTM().inverse());
      if(q.x<left||q.x>left+pw){cursor.setAttribute('visibility','hidden');return;}
      cursor.setAttribute('x1',q.x);cursor.setAttribute('x2',q.x);cursor.setAttribute('visibility','visible');
      var step=x0+(q.x-left)/pw*(x1-x0),parts=[];
      var paths=svg.querySelectorAll('path.series');
      for(var j=0;j<paths.length;j++){var n=nearest(pts(paths[j]),q.x);if(!n||Math.abs(n[0]-q.x)>8)continue;
        var s=x0+(n[0]-left)/pw*(x1-x0),v=y1-(n[1]-top)/ph*(y1-y0);
        parts.push(paths[j].getAttribute('data-series')+' \\u2248 '+num(v)+' @ '+Math.round(s));}
      out.textContent='step \\u2248 '+Math.round(step)+(parts.length?': '+parts.join('; '):'')+' (read from the drawing)';
    });
    svg.addEventListener('mouseleave',function(){cursor.setAttribute('visibility','hidden');});
  })(charts[i]);}
})();
""".strip()


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = "; ".join([
    "default-src 'none'", f"script-src {_sha256(SCRIPT)}", f"style-src {_sha256(STYLE)}", "img-src 'none'",
    "font-src 'none'", "connect-src 'none'", "media-src 'none'", "object-src 'none'", "frame-src 'none'",
    "worker-src 'none'", "manifest-src 'none'", "form-action 'none'", "base-uri 'none'",
])
"""Only the page's own style and script (by hash); no fetch of any kind, no form, no base URL."""
