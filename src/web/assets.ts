import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import { HIGHLIGHT_CSS } from './highlight-theme.ts';

/**
 * The pages' scripts and styles, served by this process (README "Web interface": pages load
 * nothing from another origin, and there is no build step for the browser): htmx and its SSE
 * extension from node_modules, the highlighted-code colours (highlight-theme.ts), and Weft's own stylesheet and script.
 */
const require = createRequire(import.meta.url);

const WEFT_JS = `'use strict';
// Live parts (README "Web interface"): every event element is keyed by its id (article#event-ID).
// An event already on the page is not shown twice, and the stream's address keeps the newest id
// seen, so when htmx's SSE extension reconnects (after a restart, also behind a proxy that
// answered 502) it resumes from there: no gap, no duplicate.
document.addEventListener('htmx:sseBeforeMessage', function (e) {
  var id = e.detail && e.detail.lastEventId;
  if (!id || !/^[0-9]+$/.test(id)) return;
  var source = e.target.closest('[sse-connect]');
  if (source) {
    var url = new URL(source.getAttribute('sse-connect'), location.href);
    var had = url.searchParams.get('last_event_id');
    if (!had || BigInt(had) < BigInt(id)) {
      url.searchParams.set('last_event_id', id);
      source.setAttribute('sse-connect', url.pathname + url.search);
    }
  }
  if (document.getElementById('event-' + id)) e.preventDefault();
});
document.addEventListener('htmx:sseMessage', function (e) {
  if (e.target.closest('[data-live-state]')) return;
  var feed = e.target.getAttribute('hx-target');
  var list = feed ? document.querySelector(feed) : e.target;
  var empty = list && list.parentElement && list.parentElement.querySelector('.feed-empty');
  if (empty) empty.remove();
});
// Expiry fields read a plain date as the end of that day in the browser's time zone (web/forms.ts tzField).
document.querySelectorAll('input[data-tz]').forEach(function (input) {
  try { input.value = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (err) { /* UTC then */ }
});
// The unread badge of the header (docs/notifications.md): the count, then again on every
// notification-updated event of the user's own scope (any instance: the stream follows the store).
(function () {
  var link = document.getElementById('inbox-link');
  var badge = document.getElementById('inbox-count');
  if (!link || !badge || !window.fetch) return;
  var refresh = function () {
    fetch('/api/v1/notifications/count', { credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) {
        if (!body || typeof body.unread !== 'number') return;
        badge.textContent = String(body.unread);
        badge.hidden = body.unread === 0;
        link.setAttribute('aria-label', 'Inbox, ' + body.unread + ' unread');
        document.dispatchEvent(new CustomEvent('weft:unread', { detail: body.unread }));
      })
      .catch(function () {});
  };
  refresh();
  if (!window.EventSource) return;
  var scope = 'user:' + link.getAttribute('data-user');
  var stream = new EventSource('/api/v1/tail-events?scope=' + encodeURIComponent(scope) + '&kind=notification-updated');
  stream.addEventListener('notification-updated', refresh);
  stream.addEventListener('open', refresh);
})();
// The live log of a running job (docs/ci.md "Pages"): the repo's stream, asked for kind=job-log,
// says when this job's log grew or the job ended (a signal: not stored, not replayed). The page
// then asks for the lines after the offset it has (the follow element's address), one request at
// a time, so no line comes twice; on every (re)connection it asks once, for what was written while
// it was away, and every 15 s in case a signal was lost. Without EventSource it asks every 2 s.
(function () {
  var log = document.querySelector('[data-job-log][data-live]');
  if (!log || !window.fetch) return;
  var job = log.getAttribute('data-job-log');
  var busy = false, again = false, done = false;
  var pull = function () {
    var follow = log.querySelector('.log-follow[data-next]');
    if (done || !follow) return;
    if (busy) { again = true; return; }
    busy = true;
    fetch(follow.getAttribute('data-next'), { credentials: 'same-origin', headers: { 'hx-request': 'true' } })
      .then(function (r) {
        if (r.headers.get('hx-refresh') === 'true') { done = true; location.reload(); return null; }
        return r.ok ? r.text() : null;
      })
      .then(function (text) {
        if (text === null || !follow.isConnected) return;
        var t = document.createElement('template');
        t.innerHTML = text;
        // lines that go on the step still open above go into it (until its ##[endgroup])
        var open = follow.previousElementSibling;
        var lead = t.content.firstElementChild;
        if (open && open.matches('details[data-open-group]') && lead && lead.matches('pre.log')) {
          var into = open.querySelector('pre.log');
          while (into && lead.firstChild) {
            var line = lead.firstChild;
            into.appendChild(line);
            if ((line.textContent || '').indexOf('##[endgroup]') >= 0) { open.removeAttribute('data-open-group'); break; }
          }
          if (!lead.firstChild) lead.remove();
        }
        follow.replaceWith(t.content);
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; pull(); }
      });
  };
  if (!window.EventSource) { setInterval(pull, 2000); return; }
  setInterval(pull, 15000);
  var connect = function () {
    var stream = new EventSource('/api/v1/tail-events?scope=' + encodeURIComponent(log.getAttribute('data-scope')) + '&kind=job-log');
    stream.addEventListener('job-log', function (e) {
      var d;
      try { d = JSON.parse(e.data); } catch (err) { return; }
      if (!d || d.job_uuid !== job) return;
      var follow = log.querySelector('.log-follow[data-from]');
      if (d.completed || !follow || !(d.size <= Number(follow.getAttribute('data-from')))) pull();
    });
    stream.addEventListener('open', pull);
    // a refused reconnection (the server restarting behind a proxy) closes it for good: open a new one
    stream.addEventListener('error', function () {
      if (stream.readyState === 2 && !done) setTimeout(connect, 3000);
    });
  };
  connect();
})();
// Code review (README "Code review"): a shift-click on a line number of a pull's diff asks for a
// comment on the range from the line chosen before (the page's address names it) to this one.
document.addEventListener('click', function (e) {
  var a = e.target.closest && e.target.closest('a[data-line]');
  if (!a || !e.shiftKey) return;
  var cur = new URL(location.href).searchParams;
  var url = new URL(a.href);
  var q = url.searchParams;
  if (!cur.get('line') || cur.get('path') !== q.get('path') || cur.get('side') !== q.get('side')) return;
  var first = Number(cur.get('start_line') || cur.get('line'));
  var clicked = Number(a.dataset.line);
  q.set('line', String(Math.max(first, clicked)));
  q.set('start_line', String(Math.min(first, clicked)));
  e.preventDefault();
  location.href = url.pathname + '?' + q.toString() + '#new-comment';
});
// A refused action (a 4xx answer) of a review form or a side bar form is the page again with the
// error beside the form: htmx swaps its part in as it does an accepted one (forms marked data-refusals).
document.addEventListener('htmx:beforeSwap', function (e) {
  var elt = e.detail.requestConfig && e.detail.requestConfig.elt;
  var status = e.detail.xhr ? e.detail.xhr.status : 0;
  if (!elt || !elt.closest || !elt.closest('[data-refusals]') || status < 400 || status > 499) return;
  e.detail.shouldSwap = true;
  e.detail.isError = false;
});
document.addEventListener('htmx:sseOpen', function (e) {
  var status = document.getElementById('live-status');
  if (status) status.textContent = 'live';
});
document.addEventListener('htmx:sseError', function () {
  var status = document.getElementById('live-status');
  if (status) status.textContent = 'reconnecting…';
});
// Line links (docs/web.md "Reading code"): #L12 or #L12-L20 marks those lines of a file or a
// blame; a click on a line number chooses it, a shift-click the range from the one chosen; the
// permalink keeps the range. Without script the number is still a link to its line.
(function () {
  var box = document.querySelector('[data-lines]');
  if (!box) return;
  var range = function () {
    var m = /^#L(\\d+)(?:-L(\\d+))?$/.exec(location.hash);
    if (!m) return null;
    var a = Number(m[1]), b = m[2] ? Number(m[2]) : a;
    return [Math.min(a, b), Math.max(a, b)];
  };
  var mark = function (scroll) {
    box.querySelectorAll('.line-mark').forEach(function (m) { m.remove(); });
    box.querySelectorAll('a.hl').forEach(function (a) { a.classList.remove('hl'); });
    var r = range();
    document.querySelectorAll('[data-permalink]').forEach(function (p) { p.href = p.href.split('#')[0] + (r ? location.hash : ''); });
    if (!r) return;
    box.querySelectorAll('tr').forEach(function (tr) {
      var first = null, last = null;
      tr.querySelectorAll('a[data-ln]').forEach(function (a) {
        var n = Number(a.getAttribute('data-ln'));
        if (n < r[0] || n > r[1]) return;
        a.classList.add('hl');
        if (!first) first = a;
        last = a;
      });
      var src = tr.querySelector('td.src');
      if (!first || !src) return;
      var m = document.createElement('div');
      m.className = 'line-mark';
      m.setAttribute('data-range', r[0] + '-' + r[1]);
      m.style.top = first.offsetTop + 'px';
      m.style.height = (last.offsetTop + last.offsetHeight - first.offsetTop) + 'px';
      src.appendChild(m);
    });
    var target = document.getElementById('L' + r[0]);
    if (scroll && target) target.scrollIntoView({ block: 'center' });
  };
  box.addEventListener('click', function (e) {
    var a = e.target.closest && e.target.closest('a[data-ln]');
    if (!a) return;
    e.preventDefault();
    var n = Number(a.getAttribute('data-ln'));
    var r = range();
    var lo = e.shiftKey && r ? Math.min(r[0], n) : n, hi = e.shiftKey && r ? Math.max(r[0], n) : n;
    history.pushState(null, '', lo === hi ? '#L' + lo : '#L' + lo + '-L' + hi);
    mark(false);
  });
  window.addEventListener('hashchange', function () { mark(true); });
  window.addEventListener('popstate', function () { mark(false); });
  mark(true);
  var copy = document.getElementById('copy-permalink');
  var link = document.getElementById('permalink');
  if (copy && link && navigator.clipboard) {
    copy.hidden = false;
    copy.addEventListener('click', function () {
      navigator.clipboard.writeText(link.href).then(function () { copy.textContent = 'Copied'; }, function () {});
    });
  }
})();
// The branch and tag switcher (web/code-view.ts): typing in its filter narrows the menu (the form
// itself asks the server for every ref that matches).
document.querySelectorAll('input[data-ref-filter]').forEach(function (input) {
  var menu = input.closest('.switcher-menu');
  input.addEventListener('input', function () {
    var q = input.value.trim().toLowerCase();
    menu.querySelectorAll('li[data-ref]').forEach(function (li) {
      li.hidden = q !== '' && li.getAttribute('data-ref').toLowerCase().indexOf(q) < 0;
    });
  });
});
// Relative times in event lists ("3 minutes ago"), the exact time on hover (its title), kept fresh.
(function () {
  if (!window.Intl || !Intl.RelativeTimeFormat) return;
  var fmt = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  var units = [['year', 31536000], ['month', 2592000], ['week', 604800], ['day', 86400], ['hour', 3600], ['minute', 60], ['second', 1]];
  var relative = function (el) {
    var iso = el.getAttribute('datetime');
    var t = Date.parse(iso);
    if (isNaN(t)) return;
    if (!el.title) el.title = iso;
    var s = (t - Date.now()) / 1000;
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(s) >= units[i][1] || units[i][0] === 'second') {
        el.textContent = Math.abs(s) < 45 ? 'just now' : fmt.format(Math.round(s / units[i][1]), units[i][0]);
        return;
      }
    }
  };
  var all = function () { document.querySelectorAll('.weft-event time[datetime], time[data-relative]').forEach(relative); };
  all();
  document.addEventListener('htmx:sseMessage', all);
  setInterval(all, 30000);
})();
// Markdown (docs/web.md "Markdown"): a Preview button beside every Markdown text area, and the
// task lists of a text the viewer may edit ticked in place (the page marks it with data-tasks).
(function () {
  if (!window.fetch) return;
  var headers = function () {
    var h = {};
    try { h = JSON.parse(document.body.getAttribute('hx-headers') || '{}'); } catch (err) { h = {}; }
    h['content-type'] = 'application/x-www-form-urlencoded';
    h['x-requested-with'] = 'fetch';
    return h;
  };
  document.querySelectorAll('textarea[name="body"], textarea[data-markdown]').forEach(function (area) {
    if (!area.id || !document.body.hasAttribute('hx-headers')) return;
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'md-preview';
    button.textContent = 'Preview';
    button.setAttribute('aria-controls', area.id + '-preview');
    button.setAttribute('aria-expanded', 'false');
    var out = document.createElement('div');
    out.id = area.id + '-preview';
    out.className = 'preview box';
    out.setAttribute('aria-live', 'polite');
    out.hidden = true;
    area.insertAdjacentElement('afterend', out);
    area.insertAdjacentElement('afterend', button);
    button.addEventListener('click', function () {
      if (!out.hidden) {
        out.hidden = true;
        area.hidden = false;
        button.textContent = 'Preview';
        button.setAttribute('aria-expanded', 'false');
        area.focus();
        return;
      }
      fetch('/markdown/preview', { method: 'POST', credentials: 'same-origin', headers: headers(), body: 'text=' + encodeURIComponent(area.value) })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(new Error(String(r.status))); })
        .then(function (h) {
          out.innerHTML = h;
          out.hidden = false;
          area.hidden = true;
          button.textContent = 'Edit';
          button.setAttribute('aria-expanded', 'true');
        })
        .catch(function () { out.textContent = 'The preview could not be made.'; out.hidden = false; });
    });
  });
  document.querySelectorAll('[data-tasks]').forEach(function (box) {
    box.querySelectorAll('input.task-list-item-checkbox').forEach(function (c) {
      c.disabled = false;
      c.setAttribute('aria-label', 'Task ' + (Number(c.getAttribute('data-task')) + 1));
    });
    box.addEventListener('change', function (e) {
      var c = e.target;
      if (!c.matches || !c.matches('input.task-list-item-checkbox')) return;
      c.disabled = true;
      fetch(box.getAttribute('data-tasks'), { method: 'POST', credentials: 'same-origin', headers: headers(), body: 'index=' + encodeURIComponent(c.getAttribute('data-task')) + '&checked=' + c.checked })
        .then(function (r) { if (!r.ok) throw new Error(String(r.status)); })
        .catch(function () { c.checked = !c.checked; })
        .then(function () { c.disabled = false; });
    });
  });
  // Passkeys (docs/signin.md "Passkeys"): WebAuthn straight from the browser, base64url by hand
  function fromB64u(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) s += '=';
    var bin = atob(s), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes.buffer;
  }
  function toB64u(buf) {
    var bytes = new Uint8Array(buf), s = '';
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function credentialJson(c) {
    var r = c.response, out = { id: c.id, rawId: toB64u(c.rawId), type: c.type, clientExtensionResults: c.getClientExtensionResults(), response: { clientDataJSON: toB64u(r.clientDataJSON) } };
    if (c.authenticatorAttachment) out.authenticatorAttachment = c.authenticatorAttachment;
    if (r.attestationObject) {
      out.response.attestationObject = toB64u(r.attestationObject);
      out.response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      out.response.authenticatorData = toB64u(r.authenticatorData);
      out.response.signature = toB64u(r.signature);
      if (r.userHandle) out.response.userHandle = toB64u(r.userHandle);
    }
    return out;
  }
  if (window.PublicKeyCredential && navigator.credentials) {
    document.querySelectorAll('[data-passkey-nojs]').forEach(function (p) { p.hidden = true; });
    document.querySelectorAll('form[data-passkey]').forEach(function (form) {
      form.hidden = false;
      form.addEventListener('submit', function (e) {
        e.preventDefault();
        var create = form.getAttribute('data-passkey') === 'create';
        var status = form.querySelector('[data-passkey-status]');
        var csrf = form.querySelector('input[name="_csrf"]').value;
        status.hidden = true;
        fetch(form.getAttribute('data-options'), { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf }, body: '_csrf=' + encodeURIComponent(csrf) })
          .then(function (r) { if (!r.ok) throw new Error('the server refused (' + r.status + ')'); return r.json(); })
          .then(function (o) {
            o.challenge = fromB64u(o.challenge);
            if (create) {
              o.user.id = fromB64u(o.user.id);
              (o.excludeCredentials || []).forEach(function (c) { c.id = fromB64u(c.id); });
              return navigator.credentials.create({ publicKey: o });
            }
            (o.allowCredentials || []).forEach(function (c) { c.id = fromB64u(c.id); });
            return navigator.credentials.get({ publicKey: o });
          })
          .then(function (c) {
            form.querySelector('input[name="response"]').value = JSON.stringify(credentialJson(c));
            form.submit();
          })
          .catch(function (err) {
            status.textContent = 'The passkey did not answer: ' + ((err && err.message) || err);
            status.hidden = false;
          });
      });
    });
  }
})();
`;

const WEFT_CSS = `:root{--fg:#1b1f24;--muted:#57606a;--bg:#fff;--line:#d0d7de;--accent:#0550ae;--ok:#116329;--bad:#a40e26;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}
.skip{position:absolute;left:-999px}.skip:focus{left:8px;top:8px;background:#fff;padding:4px}
header.top{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;padding:8px 16px;border-bottom:1px solid var(--line);background:var(--soft)}
header.top .brand{font-weight:700;text-decoration:none;color:var(--fg)}
header.top nav{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin-left:auto}
header.top form{margin:0}header.top form.search{display:flex;gap:4px;flex:1 1 14rem;max-width:28rem}
.sr-only{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0}
mark{background:#fff8c5;color:inherit}.hit pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}.hit .ln{color:var(--muted);display:inline-block;min-width:3em;text-align:right;margin-right:8px}
main{max-width:1100px;margin:0 auto;padding:16px}
img.file-image{max-width:100%;height:auto}
h1{font-size:1.5rem;margin:.5rem 0 1rem;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
.crumbs{color:var(--muted);margin:0 0 .25rem;overflow-wrap:anywhere}
.tabs{display:flex;flex-wrap:wrap;gap:4px 16px;border-bottom:1px solid var(--line);margin-bottom:16px;padding-bottom:4px}
.tabs a[aria-current=page]{font-weight:700;color:var(--fg)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:16px}
.box{border:1px solid var(--line);border-radius:6px;padding:12px;margin-bottom:16px;min-width:0}
ul.plain{list-style:none;padding:0;margin:0}
ul.plain>li{padding:6px 0;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
ul.plain>li:last-child{border-bottom:0}
.muted{color:var(--muted)}
[hidden]{display:none!important}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:.85rem;border:1px solid var(--line);background:var(--soft);color:var(--fg)}
.badge.open{background:#dafbe1;border-color:#4ac26b;color:#0f5323}.badge.merged{background:#fbefff;border-color:#c297ff;color:#512a97}.badge.closed{background:#ffebe9;border-color:#ff8182;color:#82071e}
.badge.approved{background:#dafbe1;color:#0f5323}.badge.changes_requested{background:#ffebe9;color:#82071e}
.badge.success{background:#dafbe1;color:#0f5323}.badge.failure,.badge.error,.badge.missing{background:#ffebe9;color:#82071e}.badge.pending{background:#fff8c5;color:#4d2d00}
form.stack{display:grid;gap:8px;max-width:640px}
label{font-weight:600}
input[type=text],input[type=password],input:not([type]),textarea,select{width:100%;font:inherit;padding:6px 8px;border:1px solid var(--muted);border-radius:6px;background:#fff;color:var(--fg)}
textarea{min-height:6rem}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid var(--muted);background:var(--soft);color:var(--fg);cursor:pointer}
button.primary{background:#1f883d;border-color:#1a7f37;color:#fff}
button.link{border:0;background:none;color:var(--accent);padding:0;text-decoration:underline}
.error{border:1px solid var(--bad);background:#ffebe9;color:#82071e;padding:8px 12px;border-radius:6px}
.field-error{color:#82071e;margin:0;font-size:.9rem}
.warning{border:1px solid #9a6700;background:#fff8c5;color:#4d2d00;padding:8px 12px;border-radius:6px}
[aria-invalid=true]{border-color:var(--bad)!important}
.check{display:flex;flex-wrap:wrap;gap:6px;align-items:center}
button.danger{background:#cf222e;border-color:#a40e26;color:#fff}
form.danger{border:1px solid var(--bad);border-radius:6px;padding:12px}
input[type=email],input[type=number],input[type=url]{width:100%;font:inherit;padding:6px 8px;border:1px solid var(--muted);border-radius:6px;background:#fff;color:var(--fg)}
.markdown{overflow-wrap:anywhere}.markdown pre{overflow-x:auto;background:var(--soft);padding:8px}
.markdown .task-list-item{list-style:none}.markdown .task-list-item-checkbox{margin:0 .4em 0 -1.3em;vertical-align:middle}
.markdown .anchor{float:left;margin-left:-1em;padding-right:.2em;text-decoration:none}.markdown .anchor:after{content:"#";visibility:hidden}.markdown :is(h1,h2,h3,h4,h5,h6):hover .anchor:after{visibility:visible}
.markdown .footnotes{font-size:.9em;color:var(--muted)}.md-preview{margin-top:4px}.preview{min-height:3em}
pre,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9rem}
.feed{list-style:none;padding:0;margin:0}
.weft-event{border-bottom:1px solid var(--line);padding:6px 0;overflow-wrap:anywhere}
.weft-event header{font-size:.95rem}.weft-event .kind{font-weight:600}.weft-event time{color:var(--muted);margin-left:6px}
.weft-event dl{display:none}
.weft-event .body p{margin:.25rem 0}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line)}
.diff{overflow-x:auto;border:1px solid var(--line);border-radius:6px;margin-bottom:12px}
.diff h3{margin:0;padding:6px 8px;background:var(--soft);font-size:.95rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
.diff table{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
.diff td{border:0;padding:0 8px;white-space:pre;vertical-align:top}
.diff td.n{color:var(--muted);text-align:right;user-select:none;width:1%}
.thread{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:6px 0;background:var(--bg);white-space:normal;font-family:system-ui,sans-serif}
.comments td{padding:4px 8px!important}
.tabs a{padding:4px 8px}.tabs a[aria-current]{font-weight:600;border-bottom:2px solid var(--accent)}
.diff tr.add td{background:#dafbe1}.diff tr.del td{background:#ffebe9}.diff tr.hunk td{background:#ddf4ff;color:var(--muted)}
.code{overflow-x:auto;border:1px solid var(--line);border-radius:6px}
.code table td{border:0;padding:0 8px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
.code td.n{color:var(--muted);text-align:right;user-select:none;width:1%}
.code td{vertical-align:top}.code pre{margin:0;padding:6px 0;line-height:1.45}.code pre code.hljs{padding:0;background:none;overflow:visible}
.row{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.code-head{align-items:flex-start;margin-bottom:6px}.code-head .crumbs{margin:0;align-self:center}
details.switcher>summary{border:1px solid var(--muted);border-radius:6px;padding:4px 10px;background:var(--soft);overflow-wrap:anywhere;max-width:calc(100vw - 40px)}
.switcher-menu{border:1px solid var(--line);border-radius:6px;background:var(--bg);padding:8px;margin-top:4px;width:min(24rem,calc(100vw - 40px));max-height:30rem;overflow:auto}
.switcher-menu h3{font-size:.9rem;margin:8px 0 2px}.switcher-menu ul.refs>li{padding:3px 0;display:flex;gap:8px;justify-content:space-between}.switcher-menu a[aria-current]{font-weight:700;color:var(--fg)}
.code.lines td.n a{display:block;color:var(--muted);text-decoration:none}.code.lines td.n a:hover{color:var(--accent)}.code.lines td.n a.hl{color:var(--fg);font-weight:700}
.code.lines td.src{position:relative}.line-mark{position:absolute;left:0;right:0;background:rgba(212,167,44,.25);pointer-events:none}
.blame td.blame-commit{font-family:system-ui,sans-serif;font-size:.85rem;min-width:9rem;max-width:16rem;padding:6px 8px;white-space:normal;overflow-wrap:anywhere}.blame td.blame-commit span{display:block}
.blame tr+tr td{border-top:1px solid var(--line)}.weft-event .what code{font-size:.9em}
.reply{border:1px solid var(--line);border-radius:6px;margin-bottom:12px}
.reply>header{background:var(--soft);padding:6px 10px;border-bottom:1px solid var(--line);display:flex;flex-wrap:wrap;gap:8px}
.reply>.markdown{padding:6px 10px}
details>summary{cursor:pointer}
input[type=search]{font:inherit;padding:6px 8px;border:1px solid var(--muted);border-radius:6px;min-width:0;flex:1 1 12rem}
.wrap{overflow-wrap:anywhere;word-break:break-all}pre.wrap{white-space:pre-wrap;background:var(--soft);padding:8px;border-radius:6px;max-height:32rem;overflow:auto}
details.confirm{margin:4px 0}details.confirm form{margin-top:6px}fieldset{border:1px solid var(--line);border-radius:6px;min-width:0}dl dt{font-weight:600}dl dd{margin:0 0 6px}
form.row select,form.row input[type=text]{width:auto;flex:1 1 10rem;max-width:24rem}.box>h2:first-child{margin-top:0}
.label-chip{display:inline-flex;align-items:center;gap:4px;padding:0 8px;border:1px solid var(--line);border-radius:10px;font-size:.85rem;color:var(--fg);background:var(--bg);margin:0 2px}.label-chip svg{flex:none}.chip-on .label-chip{border-color:var(--accent);font-weight:600}.chips{margin:6px 0}.thread-layout{display:grid;grid-template-columns:minmax(0,1fr) 16rem;gap:16px}@media (max-width:760px){.thread-layout{grid-template-columns:minmax(0,1fr)}}.sidebar section{border-bottom:1px solid var(--line);padding-bottom:8px;margin-bottom:8px}.sidebar h3{font-size:.95rem;margin:4px 0}.timeline{list-style:none;padding:0 0 0 12px;margin:0 0 12px;border-left:2px solid var(--line)}.timeline-entry{padding:2px 0;overflow-wrap:anywhere}.issues li{padding:6px 0;border-bottom:1px solid var(--line);overflow-wrap:anywhere}.grow{flex:1 1 auto}.small{font-size:.85rem}.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}.progress{display:flex;flex-wrap:wrap;gap:8px;align-items:center}.progress progress{flex:1 1 10rem;max-width:20rem}
.job-log pre.log,pre.log{background:#0d1117;color:#e6edf3;margin:0;padding:4px 0;overflow-x:auto;font-size:.85rem;line-height:1.45}.log-line{display:block;white-space:pre-wrap;overflow-wrap:anywhere;padding-left:4.5em;text-indent:-4.5em}.log-line:target{background:#3b2e00}.log-line .ln{display:inline-block;min-width:4em;text-indent:0;text-align:right;margin-right:.5em;color:#9198a1;text-decoration:none}
details.log-step{border:1px solid var(--line);border-radius:6px;margin:4px 0}details.log-step>summary{padding:4px 8px}.log-earlier{margin:4px 0}form.inline{display:inline}ul.runs li,#run-jobs li{margin:4px 0}
.ansi-black-fg,.ansi-bright-black-fg{color:#9198a1}.ansi-red-fg{color:#ff7b72}.ansi-bright-red-fg{color:#ffa198}.ansi-green-fg{color:#3fb950}.ansi-bright-green-fg{color:#56d364}.ansi-yellow-fg{color:#d29922}.ansi-bright-yellow-fg{color:#e3b341}.ansi-blue-fg{color:#79c0ff}.ansi-bright-blue-fg{color:#a5d6ff}.ansi-magenta-fg{color:#d2a8ff}.ansi-bright-magenta-fg{color:#e2c5ff}.ansi-cyan-fg{color:#56d4dd}.ansi-bright-cyan-fg{color:#b3f0ff}.ansi-white-fg,.ansi-bright-white-fg{color:#f0f6fc}
.ansi-black-bg,.ansi-bright-black-bg{background:#000}.ansi-red-bg,.ansi-bright-red-bg{background:#67060c}.ansi-green-bg,.ansi-bright-green-bg{background:#033a16}.ansi-yellow-bg,.ansi-bright-yellow-bg{background:#3b2300}.ansi-blue-bg,.ansi-bright-blue-bg{background:#0c2d6b}.ansi-magenta-bg,.ansi-bright-magenta-bg{background:#3c1e70}.ansi-cyan-bg,.ansi-bright-cyan-bg{background:#0c3a40}.ansi-white-bg,.ansi-bright-white-bg{background:#30363d}.ansi-bold{font-weight:700}.ansi-italic{font-style:italic}.ansi-underline{text-decoration:underline}
@media (max-width:600px){main{padding:10px}h1{font-size:1.25rem}header.top nav{margin-left:0}}
@media (prefers-color-scheme:dark){
:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--line:#3d444d;--accent:#58a6ff;--ok:#3fb950;--bad:#f85149;--soft:#151b23;color-scheme:dark}
.skip:focus{background:var(--bg)}
mark{background:#5c4a00}
input[type=text],input[type=password],input:not([type]),textarea,select,input[type=email],input[type=number],input[type=url],input[type=search]{background:var(--bg)}
.error{background:#3c0a0e;color:#ffdcd7}.field-error{color:#ff9492}.warning{background:#2e2400;color:#f2cc60;border-color:#9e6a03}
.badge.open,.badge.approved,.badge.success{background:#033a16;color:#aff5b4}.badge.merged{background:#271052;color:#e2c5ff}
.badge.closed,.badge.changes_requested,.badge.failure,.badge.error,.badge.missing{background:#67060c;color:#ffdcd7}.badge.pending{background:#2e2400;color:#f2cc60}
.diff tr.add td{background:#033a16}.diff tr.del td{background:#67060c}.diff tr.hunk td{background:#0c2d6b;color:#c9d1d9}
}
`;

interface Asset {
  type: string;
  body: string | Buffer;
}

function load(): Record<string, Asset> {
  const js = 'text/javascript; charset=utf-8';
  return {
    'htmx.min.js': { type: js, body: readFileSync(require.resolve('htmx.org/dist/htmx.min.js')) },
    'sse.js': { type: js, body: readFileSync(require.resolve('htmx-ext-sse/dist/sse.min.js')) },
    'weft.js': { type: js, body: WEFT_JS },
    'weft.css': { type: 'text/css; charset=utf-8', body: WEFT_CSS },
    'highlight.css': { type: 'text/css; charset=utf-8', body: HIGHLIGHT_CSS },
  };
}

export async function assetRoutes(app: FastifyInstance): Promise<void> {
  const assets = load();
  app.get<{ Params: { name: string } }>(
    '/static/:name',
    { config: { public: true }, schema: { hide: true } },
    async (request, reply) => {
      const asset = assets[request.params.name];
      if (!asset) return reply.status(404).type('text/plain; charset=utf-8').send('Not found.');
      return reply.header('cache-control', 'public, max-age=3600').type(asset.type).send(asset.body);
    },
  );
}
