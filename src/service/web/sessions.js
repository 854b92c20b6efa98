// The sessions this browser opened on this server (loaded before app.js, whose `app`, request() and
// setStatus() it uses). The server holds at most --max-sessions and frees one only on close_session
// or after the idle timeout, so the page closes its session when it is left (pagehide: a keepalive
// fetch, which outlives the page and carries the bearer token) and, in case that request was lost,
// again when its tab loads the page anew. Every session opened here is remembered in localStorage
// (shared by this origin's tabs) and listed under "Your sessions", each with End (close_session).
'use strict';

const SESSIONS_KEY = 'segmux.sessions';  // localStorage: [{id, video, opened (ms)}], this browser's
const TAB_SESSION_KEY = 'segmux.tab-session';  // sessionStorage: the session this tab has open
const FORGET_AFTER_MS = 24 * 3600 * 1000;  // long past any idle timeout: the server has closed it

function storedSessions() {
  try {
    const list = JSON.parse(localStorage.getItem(SESSIONS_KEY) || '[]');
    return Array.isArray(list) ? list.filter((s) => s && typeof s.id === 'string') : [];
  } catch (e) {
    return [];  // storage off or garbled: the list is a convenience, the page works without it
  }
}

function storeSessions(list) {
  try { localStorage.setItem(SESSIONS_KEY, JSON.stringify(list)); } catch (e) { /* storage off */ }
  renderSessions();
}

function rememberSession(id, video) {
  const list = storedSessions().filter((s) => s.id !== id && Date.now() - (s.opened || 0) < FORGET_AFTER_MS);
  list.push({id, video, opened: Date.now()});
  try { sessionStorage.setItem(TAB_SESSION_KEY, id); } catch (e) { /* storage off */ }
  storeSessions(list);
}

function forgetSession(id) {
  try { if (sessionStorage.getItem(TAB_SESSION_KEY) === id) sessionStorage.removeItem(TAB_SESSION_KEY); } catch (e) { }
  storeSessions(storedSessions().filter((s) => s.id !== id));
}

// End (a listed session, this page's or another tab's): close_session is idempotent, so a session the
// server has already closed (expired) just leaves the list.
async function endSession(id) {
  await request({type: 'close_session', session_id: id});
  forgetSession(id);
  if (app.session && app.session.session_id === id) {
    app.session = null;
    enable(false);
    setStatus('Session ' + id + ' ended. Open a video to start again.', 'ended');
  } else {
    setStatus('Session ' + id + ' ended.', document.body.dataset.status);
  }
}

// The session this tab had open before a reload or a navigation back, if the pagehide close was lost.
async function closeLeftoverSession() {
  let id = null;
  try { id = sessionStorage.getItem(TAB_SESSION_KEY); } catch (e) { /* storage off */ }
  if (!id) return;
  await request({type: 'close_session', session_id: id}).catch(() => {});
  forgetSession(id);
}

function closeOnLeave() {
  if (!app.session) return;
  const id = app.session.session_id;
  fetch('/api/request', {method: 'POST', keepalive: true, headers: headers({'Content-Type': 'application/json'}),
                         body: JSON.stringify({type: 'close_session', session_id: id})}).catch(() => {});
  forgetSession(id);
  app.closedOnLeave = true;
}

function renderSessions() {
  const ul = $('sessions');
  if (!ul) return;
  ul.textContent = '';
  const mine = app.session && app.session.session_id;
  const list = storedSessions();
  for (const s of list) {
    const li = document.createElement('li');
    li.dataset.sessionId = s.id;
    const label = document.createElement('span');
    label.className = 'label';
    const when = new Date(s.opened || 0).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'});
    label.textContent = s.id + ' · ' + (s.video || '?') + ' · ' + when + (s.id === mine ? ' (this page)' : '');
    const end = document.createElement('button');
    end.type = 'button';
    end.className = 'end';
    end.textContent = 'End';
    end.title = 'close_session: free it on the server';
    end.addEventListener('click', () => endSession(s.id).catch(fail));
    li.append(label, end);
    ul.append(li);
  }
  $('sessions-none').hidden = list.length > 0;
}

function wireSessions() {
  window.addEventListener('pagehide', closeOnLeave);
  // Back from the back/forward cache after pagehide closed the session: start afresh.
  window.addEventListener('pageshow', (e) => { if (e.persisted && app.closedOnLeave) location.reload(); });
  window.addEventListener('storage', (e) => { if (e.key === SESSIONS_KEY) renderSessions(); });
  renderSessions();
}
