// The agora web client: sign-in by link, the channel list with unread counts, and the views
// (a channel, search, mentions, staff pages), kept current by the live socket with a catch-up
// read of GET /events after every (re)connect.

import { ApiError, del, get, post, query, session, whenUnauthorized } from './api.js';
import { Cable } from './cable.js';
import { $, h, replace } from './dom.js';
import { seqOf } from './messages.js';
import { channelView } from './views/channel.js';
import { mentionsView, searchView } from './views/results.js';
import { staffView } from './views/staff.js';

const state = {
  me: null,
  /// Channel id → channel item of GET /channels, plus `lastSeq` and `readSeq` kept here.
  channels: new Map(),
  /// People and bots to complete `@handle`s with.
  people: new Map(),
  /// The feed position after the last event applied.
  cursor: null,
  view: null,
};
let cable = null;

// ---- signing in and out ----

function showSignin(message) {
  cable?.stop();
  cable = null;
  state.view?.destroy();
  state.view = null;
  $('#shell').hidden = true;
  $('#signin').hidden = false;
  if (message) $('#signin-message').textContent = message;
  document.title = 'Sign in · agora';
}

/// Exchanges a sign-in link (`?login=`) or an invitation (`?invite=`) for a browser session,
/// then takes the code out of the address bar.
async function redeemLink() {
  const params = new URLSearchParams(location.search);
  const login = params.get('login');
  const invite = params.get('invite');
  if (!login && !invite) return true;
  history.replaceState(null, '', `${location.pathname}${location.hash}`);
  try {
    const answer = login
      ? await post(`/login_links/${encodeURIComponent(login)}/exchange`)
      : await post(`/invites/${encodeURIComponent(invite)}/accept`);
    session.set(answer.token);
    return true;
  } catch (e) {
    session.clear();
    showSignin(e.status === 404
      ? `This ${login ? 'sign-in link' : 'invitation'} was used already or has expired. Ask for a new one.`
      : e.message);
    return false;
  }
}

async function signOut() {
  try {
    await del('/session');
  } catch {
    // Signed out here either way; the session expires on its own.
  }
  session.clear();
  showSignin('You are signed out.');
}

whenUnauthorized(() => {
  session.clear();
  showSignin('Your session has ended. Sign in again with a new link.');
});

// ---- channels and unread counts ----

async function loadChannels() {
  const all = [];
  let cursor = null;
  do {
    const page = await get(`/channels${query({ cursor, limit: 100 })}`);
    all.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  const known = state.channels;
  state.channels = new Map();
  for (const c of all) {
    const readSeq = c.last_read_id ? seqOf(c.last_read_id) : 0;
    const before = known.get(c.id);
    state.channels.set(c.id, { ...c, readSeq, lastSeq: Math.max(readSeq + c.unread_count, before?.lastSeq ?? 0) });
  }
  renderChannels();
}

function renderChannels() {
  const current = state.view?.channelId;
  const items = [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name));
  replace($('#channel-list'), items.length ? items.map((c) => {
    const unread = c.id === current ? 0 : c.unread_count;
    return h('li', {},
      h('a', { href: `#/c/${encodeURIComponent(c.id)}`, 'aria-current': c.id === current ? 'page' : false, class: unread ? 'has-unread' : '' },
        h('span', { class: 'name' }, `#${c.name}`),
        c.external ? h('span', { class: 'ext', title: 'External: people outside the organization read it' }, 'ext') : null,
        unread ? h('span', { class: 'unread', 'aria-label': `${unread} unread` }, String(unread)) : null));
  }) : h('li', { class: 'empty' }, 'No channels yet.'));
}

const readTimers = new Map();
/// Moves the read marker to `messageId` (never back), a moment later so a burst is one call.
function markRead(channelId, messageId) {
  const c = state.channels.get(channelId);
  if (!c) return;
  const seq = seqOf(messageId);
  c.unread_count = 0;
  c.lastSeq = Math.max(c.lastSeq, seq);
  renderChannels();
  if (seq <= c.readSeq) return;
  c.readSeq = seq;
  clearTimeout(readTimers.get(channelId));
  readTimers.set(channelId, setTimeout(() => {
    readTimers.delete(channelId);
    post(`/channels/${channelId}/read`, { message_id: `${channelId}-${c.readSeq}` }).catch(() => {});
  }, 250));
}

// ---- people, for @handle completion ----

async function loadPeople() {
  if (state.me.role === 'guest') return;
  try {
    let cursor = null;
    do {
      const page = await get(`/people${query({ cursor, limit: 100 })}`);
      for (const p of page.items) state.people.set(p.handle, { handle: p.handle, name: p.name });
      cursor = page.next_cursor;
    } while (cursor);
  } catch {
    // Completion then offers the authors seen so far.
  }
}

function rememberAuthor(m) {
  const handle = m.author?.handle;
  if (handle && !state.people.has(handle)) state.people.set(handle, { handle, name: m.actor_label });
}

// ---- events: the socket, and the feed after every (re)connect ----

function apply(item) {
  const c = state.channels.get(item.channel_id);
  switch (item.kind) {
    case 'message.created': {
      const m = item.message;
      rememberAuthor(m);
      const seq = seqOf(m.id);
      if (c && seq > c.lastSeq) {
        c.lastSeq = seq;
        const viewing = state.view?.channelId === c.id && document.visibilityState === 'visible';
        if (m.author?.id === state.me.id) markRead(c.id, m.id);
        else if (!viewing && seq > c.readSeq) c.unread_count += 1;
      }
      break;
    }
    case 'member.added':
    case 'channel.created':
      if (!c || item.member?.id === state.me.id) loadChannels().catch(() => {});
      break;
    case 'member.removed':
      if (item.member?.id === state.me.id) {
        state.channels.delete(item.channel_id);
        if (state.view?.channelId === item.channel_id) {
          location.hash = '#/';
          notice('You were removed from that channel.');
        }
      }
      break;
    default:
  }
  state.view?.onEvent(item);
  renderChannels();
}

let catchingUp = Promise.resolve();
/// Reads GET /events from the saved cursor to the end; the socket only carries what follows
/// its subscription.
function catchUp() {
  catchingUp = catchingUp.then(async () => {
    state.catchingUp = true;
    try {
      let cursor = state.cursor;
      for (;;) {
        const page = await get(`/events${query({ cursor, limit: 100 })}`);
        page.items.forEach(apply);
        if (!page.next_cursor) {
          state.cursor = page.latest_cursor;
          break;
        }
        cursor = page.next_cursor;
      }
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) setStatus('Could not catch up; retrying on the next connection.');
    } finally {
      state.catchingUp = false;
      document.documentElement.dataset.live = 'true';
    }
  });
  return catchingUp;
}

function onSocketEvent(item) {
  apply(item);
  // While a catch-up runs, its own end position is the one to keep.
  if (!state.catchingUp) state.cursor = item.cursor;
}

function setStatus(text) {
  $('#conn-status').textContent = text;
  // `data-live` says the socket is subscribed and caught up (tests wait for it).
  if (/onnecting/.test(text)) delete document.documentElement.dataset.live;
}

function notice(text) {
  setStatus(text);
  setTimeout(() => { if ($('#conn-status').textContent === text) setStatus(''); }, 5000);
}

// ---- views ----

const ctx = {
  get me() { return state.me; },
  get channels() { return state.channels; },
  people: () => [...state.people.values()].filter((p) => p.handle !== state.me.handle).sort((a, b) => a.handle.localeCompare(b.handle)),
  markRead,
  reloadChannels: () => loadChannels(),
  navigate: (hash) => { location.hash = hash; },
};

function emptyView(text) {
  return {
    el: h('section', { class: 'view empty-view', 'aria-labelledby': 'empty-title' },
      h('header', { class: 'view-head' }, h('h1', { id: 'empty-title' }, 'Welcome to agora')),
      h('p', { class: 'note' }, text)),
    title: 'agora',
    start() {},
    focus() {},
    onEvent() {},
    destroy() {},
  };
}

function viewFor(hash) {
  const [, kind, ...rest] = hash.replace(/^#/, '').split('/');
  const arg = decodeURIComponent(rest.join('/'));
  if (kind === 'c') {
    const c = state.channels.get(arg);
    return c ? channelView(ctx, c) : emptyView('That channel does not exist, or you are not in it.');
  }
  if (kind === 'search' && arg) return searchView(ctx, arg);
  if (kind === 'mentions') return mentionsView(ctx);
  if (kind === 'staff' && state.me.staff) return staffView(ctx);
  const first = [...state.channels.values()].sort((a, b) => a.name.localeCompare(b.name))[0];
  if (first) {
    history.replaceState(null, '', `#/c/${encodeURIComponent(first.id)}`);
    return channelView(ctx, first);
  }
  return emptyView(state.me.staff
    ? 'You are in no channels yet. Create one in the staff pages.'
    : 'You are in no channels yet. Staff can add you to one.');
}

function route() {
  if (!state.me) return;
  state.view?.destroy();
  const view = viewFor(location.hash);
  state.view = view;
  replace($('#main'), view.el);
  document.title = `${view.title} · agora`;
  for (const a of document.querySelectorAll('.nav-links a')) {
    a.toggleAttribute('aria-current', a.getAttribute('href') === location.hash);
  }
  setMenu(false);
  renderChannels();
  view.start();
  view.focus();
}

function setMenu(open) {
  $('#sidebar').classList.toggle('open', open);
  $('#menu-toggle').setAttribute('aria-expanded', String(open));
}

// ---- start ----

async function boot() {
  $('#sign-out').addEventListener('click', signOut);
  $('#menu-toggle').addEventListener('click', () => setMenu(!$('#sidebar').classList.contains('open')));
  $('#search-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const q = $('#search-q').value.trim();
    if (q) location.hash = `#/search/${encodeURIComponent(q)}`;
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && $('#sidebar').classList.contains('open')) setMenu(false);
  });
  window.addEventListener('hashchange', route);

  if (!(await redeemLink())) return;
  if (!session.get()) return showSignin();
  try {
    state.me = await get('/me');
    // The feed position first: everything after it is caught up once the socket is live.
    state.cursor = (await get('/events')).latest_cursor;
    await loadChannels();
  } catch (e) {
    if (e.status !== 401) showSignin(e.message);
    return;
  }
  $('#me-label').textContent = `${state.me.name} (@${state.me.handle})${state.me.role === 'guest' ? ' · guest' : ''}`;
  $('#staff-link').hidden = !state.me.staff;
  $('#signin').hidden = true;
  $('#shell').hidden = false;
  loadPeople();
  route();
  cable = new Cable({ onEvent: onSocketEvent, onLive: catchUp, onStatus: setStatus });
  cable.start();
}

boot();
