// The staff pages: channels and their members, bots, person keys, invitations and connector
// tokens; each can be made here and revoked here. A new secret is shown once, with a copy button.

import { del, get, post, query } from '../api.js';
import { copyText, h, replace } from '../dom.js';

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '');

/// A labelled field; `attrs` go on the input.
function field(label, attrs) {
  const id = `f-${attrs.name}-${Math.random().toString(36).slice(2, 8)}`;
  const input = attrs.type === 'select'
    ? h('select', { id, name: attrs.name, required: attrs.required }, attrs.options)
    : h('input', { id, ...attrs });
  return { input, el: h('div', { class: attrs.type === 'checkbox' ? 'field check' : 'field' }, h('label', { for: id }, label), input) };
}

/// A secret shown once, with a copy button.
function secretBox(title, value, note) {
  const input = h('input', { type: 'text', readonly: true, value, class: 'secret', 'aria-label': title });
  const copied = h('span', { role: 'status', class: 'copied' });
  return h('div', { class: 'secret-box', role: 'region', 'aria-label': title },
    h('p', {}, h('strong', {}, title), ' ', note || 'Shown once: copy it now.'),
    h('div', { class: 'row' }, input,
      h('button', { type: 'button', onclick: async () => {
        copied.textContent = (await copyText(value, input)) ? 'Copied.' : 'Selected: press Ctrl+C to copy.';
      } }, 'Copy')),
    copied);
}

/// One section: a heading, a form that makes something, and the list of what exists.
function section(id, title, intro) {
  const list = h('ul', { class: 'items', 'aria-label': title });
  const result = h('div', { class: 'result', 'aria-live': 'polite' });
  const error = h('p', { class: 'form-error', role: 'alert' });
  const el = h('section', { class: 'staff-section', id, 'aria-labelledby': `${id}-title` },
    h('h2', { id: `${id}-title` }, title), h('p', { class: 'note' }, intro));
  return { el, list, result, error };
}

function itemRow(text, detail, button) {
  return h('li', {}, h('span', { class: 'item-main' }, text), detail ? h('span', { class: 'item-detail' }, detail) : null, button);
}

function revokeButton(label, onclick) {
  return h('button', { type: 'button', class: 'secondary danger', 'aria-label': label, onclick }, label.split(' ')[0]);
}

async function all(path) {
  const items = [];
  let cursor = null;
  do {
    const page = await get(`${path}${query({ cursor, limit: 100 })}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

function makeForm(s, fields, submitLabel, onsubmit) {
  const form = h('form', { class: 'staff-form', onsubmit: async (e) => {
    e.preventDefault();
    s.error.textContent = '';
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      await onsubmit();
      form.reset();
    } catch (err) {
      s.error.textContent = err.message;
    } finally {
      button.disabled = false;
    }
  } }, fields.map((f) => f.el), h('button', { type: 'submit' }, submitLabel));
  s.el.append(form, s.error, s.result, s.list);
  return form;
}

export function staffView(ctx) {
  let people = [];
  let bots = [];

  // ---- channels and members ----
  const channels = section('staff-channels', 'Channels', 'Create a channel (you join it), and add or remove its members. An external channel can have outside guests.');
  const chName = field('Name', { name: 'name', required: true, maxlength: 80 });
  const chTopic = field('Topic (optional)', { name: 'topic', maxlength: 250 });
  const chExternal = field('External: people outside the organization may read it', { name: 'external', type: 'checkbox' });
  makeForm(channels, [chName, chTopic, chExternal], 'Create channel', async () => {
    const c = await post('/channels', { name: chName.input.value, topic: chTopic.input.value || null, external: chExternal.input.checked });
    channels.result.replaceChildren(h('p', {}, `Created #${c.name}.`));
    await ctx.reloadChannels();
    renderChannels();
  });
  const memberPanel = h('div', { class: 'members' });
  async function showMembers(c) {
    const members = await all(`/channels/${c.id}/members`);
    const ids = new Set(members.map((m) => m.id));
    const candidates = [...people, ...bots].filter((p) => !ids.has(p.id) && (!c.external ? p.role !== 'guest' : true));
    const pick = field('Add a member', { name: 'member', type: 'select', required: true,
      options: candidates.map((p) => h('option', { value: p.id }, `${p.name} (@${p.handle})${p.kind === 'bot' ? ' · bot' : p.role === 'guest' ? ' · guest' : ''}`)) });
    const error = h('p', { class: 'form-error', role: 'alert' });
    replace(memberPanel,
      h('h3', {}, `Members of #${c.name}`),
      h('ul', { class: 'items', 'aria-label': `Members of #${c.name}` }, members.map((m) => itemRow(`${m.name} (@${m.handle})`, m.kind === 'bot' ? 'bot' : '',
        revokeButton(`Remove @${m.handle} from #${c.name}`, async () => {
          try {
            await del(`/channels/${c.id}/members/${encodeURIComponent(m.id)}`);
            await showMembers(c);
          } catch (e) {
            error.textContent = e.message;
          }
        })))),
      candidates.length ? h('form', { class: 'staff-form', onsubmit: async (e) => {
        e.preventDefault();
        try {
          await post(`/channels/${c.id}/members`, { member_id: pick.input.value });
          await showMembers(c);
        } catch (err) {
          error.textContent = err.message;
        }
      } }, pick.el, h('button', { type: 'submit' }, 'Add')) : h('p', { class: 'note' }, 'Everyone is a member already.'),
      error);
  }
  function renderChannels() {
    replace(channels.list, [...ctx.channels.values()].sort((a, b) => a.name.localeCompare(b.name)).map((c) =>
      itemRow(`#${c.name}`, `${c.member_count} ${c.member_count === 1 ? 'member' : 'members'}${c.external ? ' · external' : ''}`,
        h('button', { type: 'button', class: 'secondary', 'aria-label': `Members of #${c.name}`, onclick: () => showMembers(c).catch((e) => { channels.error.textContent = e.message; }) }, 'Members'))));
    channels.list.after(memberPanel);
  }

  // ---- bots ----
  const botSection = section('staff-bots', 'Bots', 'A bot posts with its own token (source bot). It sees only the channels you add it to.');
  const botName = field('Name', { name: 'name', required: true, maxlength: 80 });
  const botHandle = field('Handle', { name: 'handle', required: true, maxlength: 32, pattern: '[a-z0-9][a-z0-9_.\\-]{0,31}', autocapitalize: 'off' });
  makeForm(botSection, [botName, botHandle], 'Create bot', async () => {
    const answer = await post('/bots', { name: botName.input.value, handle: botHandle.input.value });
    botSection.result.replaceChildren(secretBox(`Token of ${answer.bot.name}`, answer.token));
    await loadBots();
  });
  async function loadBots() {
    bots = await all('/bots');
    replace(botSection.list, bots.map((b) => itemRow(`${b.name} (@${b.handle})`, `since ${when(b.created_at)}`,
      revokeButton(`Delete bot @${b.handle}`, async () => {
        if (!window.confirm(`Delete the bot @${b.handle}? Its token stops working at once.`)) return;
        await del(`/bots/${b.id}`).catch((e) => { botSection.error.textContent = e.message; });
        await loadBots();
      }))));
  }

  // ---- person keys ----
  const keySection = section('staff-keys', 'Your person keys', 'A key lets your AI agent act for you; what it posts is labelled as your agent (source agent).');
  const keyName = field('Key name', { name: 'name', required: true, maxlength: 60 });
  makeForm(keySection, [keyName], 'Create key', async () => {
    const answer = await post('/keys', { name: keyName.input.value });
    keySection.result.replaceChildren(secretBox(`Key ${answer.key.name}`, answer.token));
    await loadKeys();
  });
  async function loadKeys() {
    const keys = await all('/keys');
    replace(keySection.list, keys.map((k) => itemRow(k.name, k.revoked_at ? `revoked ${when(k.revoked_at)}` : `since ${when(k.created_at)}`,
      k.revoked_at ? null : revokeButton(`Revoke key ${k.name}`, async () => {
        await del(`/keys/${k.id}`).catch((e) => { keySection.error.textContent = e.message; });
        await loadKeys();
      }))));
  }

  // ---- invitations ----
  const inviteSection = section('staff-invites', 'Invitations', 'Invite an outside guest to external channels. The link works once, for 7 days; the guest reads and posts only there.');
  const invName = field('Name', { name: 'name', required: true, maxlength: 80 });
  const invEmail = field('E-mail address', { name: 'email', type: 'email', required: true, maxlength: 254 });
  const invChannels = h('fieldset', { class: 'field' }, h('legend', {}, 'External channels'));
  const invForm = makeForm(inviteSection, [invName, invEmail, { el: invChannels }], 'Create invitation', async () => {
    const ids = [...invForm.querySelectorAll('input[name=channel]:checked')].map((i) => i.value);
    const answer = await post('/invites', { name: invName.input.value, email: invEmail.input.value, channel_ids: ids });
    inviteSection.result.replaceChildren(secretBox(`Invitation link for ${answer.invite.name}`, answer.url, 'Send it to them; it works once.'));
    await loadInvites();
  });
  function renderInviteChannels() {
    const external = [...ctx.channels.values()].filter((c) => c.external);
    replace(invChannels, h('legend', {}, 'External channels'), external.length
      ? external.map((c) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'channel', value: c.id }), ` #${c.name}`))
      : h('p', { class: 'note' }, 'No external channels yet.'));
  }
  async function loadInvites() {
    const invites = await all('/invites');
    replace(inviteSection.list, invites.map((i) => itemRow(`${i.name} <${i.email}>`,
      i.accepted_at ? `accepted ${when(i.accepted_at)}` : i.revoked_at ? `withdrawn ${when(i.revoked_at)}` : `open until ${when(i.expires_at)}`,
      i.accepted_at || i.revoked_at ? null : revokeButton(`Withdraw invitation of ${i.email}`, async () => {
        await del(`/invites/${i.id}`).catch((e) => { inviteSection.error.textContent = e.message; });
        await loadInvites();
      }))));
  }

  // ---- connector tokens ----
  const connSection = section('staff-connectors', 'Connector tokens', "The organization's connector acts for a person (source agent); a read-scope token can only read.");
  const connPerson = field('Person', { name: 'person_id', type: 'select', required: true, options: [] });
  const connScope = field('Scope', { name: 'scope', type: 'select', required: true,
    options: [h('option', { value: 'read' }, 'read'), h('option', { value: 'write' }, 'write')] });
  makeForm(connSection, [connPerson, connScope], 'Issue token', async () => {
    const answer = await post('/connector_tokens', { person_id: connPerson.input.value, scope: connScope.input.value });
    connSection.result.replaceChildren(secretBox('Connector token', answer.token));
    await loadConnectors();
  });
  async function loadConnectors() {
    const tokens = await all('/connector_tokens');
    const name = (id) => people.find((p) => p.id === id)?.name || id;
    replace(connSection.list, tokens.map((t) => itemRow(`${name(t.person_id)} · ${t.scope}`, t.revoked_at ? `revoked ${when(t.revoked_at)}` : `since ${when(t.created_at)}`,
      t.revoked_at ? null : revokeButton(`Revoke connector token of ${name(t.person_id)}`, async () => {
        await del(`/connector_tokens/${t.id}`).catch((e) => { connSection.error.textContent = e.message; });
        await loadConnectors();
      }))));
  }

  const el = h('section', { class: 'view staff-view', 'aria-labelledby': 'staff-title' },
    h('header', { class: 'view-head' }, h('h1', { id: 'staff-title', tabindex: -1 }, 'Staff'),
      h('nav', { class: 'jump', 'aria-label': 'Staff sections' },
        [['staff-channels', 'Channels'], ['staff-bots', 'Bots'], ['staff-keys', 'Keys'], ['staff-invites', 'Invitations'], ['staff-connectors', 'Connectors']]
          .map(([id, label]) => h('a', { href: `#/staff`, onclick: (e) => { e.preventDefault(); document.getElementById(id)?.scrollIntoView(); } }, label)))),
    h('div', { class: 'scroller staff-body' }, channels.el, botSection.el, keySection.el, inviteSection.el, connSection.el));

  return {
    el,
    title: 'Staff',
    async start() {
      renderChannels();
      renderInviteChannels();
      try {
        people = await all('/people');
        replace(connPerson.input, people.map((p) => h('option', { value: p.id }, `${p.name} (@${p.handle})`)));
        await Promise.all([loadBots(), loadKeys(), loadInvites(), loadConnectors()]);
      } catch (e) {
        channels.error.textContent = e.message;
      }
    },
    focus: () => el.querySelector('h1').focus(),
    onEvent(ev) {
      if (ev.kind === 'channel.created' || ev.kind.startsWith('member.')) {
        setTimeout(() => { renderChannels(); renderInviteChannels(); }, 300);
      }
    },
    destroy() {},
  };
}
