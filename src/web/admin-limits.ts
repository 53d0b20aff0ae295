import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { RATE_LIMITED_OPERATIONS } from '../http/rate-limit.ts';
import { CreateRuleBody, UpdateRuleBody } from '../ratelimits/schemas.ts';
import { type RuleJson, createRule, deleteRule, getRule, listRules, updateRule } from '../ratelimits/service.ts';
import { INVITE_CREATORS, UpdateSiteSettingsBody } from '../settings/schemas.ts';
import { getSettings, updateSettings } from '../settings/service.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, checked, dangerForm, emptyForm, field, formMessage } from './forms.ts';
import { type Html, html, pager, seg } from './html.ts';
import { csrfField } from './layout.ts';
import { apiBody } from './api-body.ts';
import { Check, Csrf, PageNumber, Text, UuidParams, adminPage, typedForm } from './admin-common.ts';

const ListQuery = Type.Object({ page: PageNumber }, { additionalProperties: false });
const RuleForm = Type.Object(
  { _csrf: Csrf, scope: Text(100), max_requests: Text(20), window_seconds: Text(20), is_enabled: Check },
  { additionalProperties: false },
);
const DeleteForm = Type.Object({ _csrf: Csrf, confirm: Text(100) }, { additionalProperties: false });
const SettingsForm = Type.Object(
  {
    _csrf: Csrf,
    rate_limits_enabled: Check,
    signups_enabled: Check,
    signups_require_invite: Check,
    signup_invite_creators: Text(20),
    signup_invite_max_per_24h: Text(20),
    signup_invite_min_account_age: Text(40),
    max_timers_per_owner: Text(20),
    max_reply_versions: Text(20),
    webhook_allowed_hosts: Text(30_000),
  },
  { additionalProperties: false },
);
const RULE_FIELDS = ['scope', 'max_requests', 'window_seconds', 'is_enabled'] as const;
const SETTINGS_FIELDS = [
  'rate_limits_enabled',
  'signups_enabled',
  'signups_require_invite',
  'signup_invite_creators',
  'signup_invite_max_per_24h',
  'signup_invite_min_account_age',
  'max_timers_per_owner',
  'max_reply_versions',
  'webhook_allowed_hosts',
] as const;
const RULES_PER_PAGE = 30;

/** A number field's text as the API's integer (anything else is left for the API's schema to refuse). */
const int = (text: string | undefined): unknown => (text !== undefined && /^-?\d{1,15}$/.test(text.trim()) ? Number(text) : text);

function ruleFields(state: FormState | undefined, rule: RuleJson | null, idPrefix: string): Html {
  return html`${field(state, {
    name: 'scope',
    label: 'Operation',
    type: 'select',
    value: rule?.scope,
    options: RATE_LIMITED_OPERATIONS.map((o) => [o, o] as const),
    idPrefix,
  })}
  ${field(state, { name: 'max_requests', label: 'Requests', type: 'number', required: true, value: rule?.max_requests, idPrefix })}
  ${field(state, {
    name: 'window_seconds',
    label: 'Window (seconds)',
    type: 'number',
    required: true,
    value: rule?.window_seconds,
    idPrefix,
  })}
  ${field(state, { name: 'is_enabled', label: 'Enabled', type: 'checkbox', value: rule ? rule.is_enabled : true, idPrefix })}`;
}

type RuleForms = { new?: FormState; edit?: { uuid: string; state: FormState }; del?: { uuid: string; state: FormState } };

async function rulesPage(deps: Deps, c: PageCaller, q: { page?: number }, forms: RuleForms = {}): Promise<Html> {
  const w = pageWindow(q, RULES_PER_PAGE);
  const rules = await listRules(deps, c.viewer, w);
  const body = html`${
      rules.length
        ? html`<ul class="plain" aria-label="Rate-limit rules">
            ${rules.slice(0, w.perPage).map((r) => {
              const edit = forms.edit?.uuid === r.uuid ? forms.edit.state : undefined;
              const del = forms.del?.uuid === r.uuid ? forms.del.state : undefined;
              const action = `/admin/rate-limits/${seg(r.uuid)}`;
              return html`<li id="rule-${r.uuid}">
                <strong>${r.scope}</strong>: ${r.max_requests} requests per ${r.window_seconds} s
                <span class="badge ${r.is_enabled ? 'open' : 'closed'}">${r.is_enabled ? 'enabled' : 'disabled'}</span>
                <details ${edit ? html` open` : ''}>
                  <summary>Edit</summary>
                  ${formMessage(edit)}
                  <form class="stack" method="post" action="${action}">
                    ${csrfField(c)} ${ruleFields(edit, r, `rule-${r.uuid}`)}
                    <div><button type="submit">Save</button></div>
                  </form>
                </details>
                <details ${del ? html` open` : ''}>
                  <summary>Delete</summary>
                  ${formMessage(del)}
                  ${dangerForm({ action: `${action}/delete`, csrf: c.csrf, label: 'Delete rule', confirmWith: 'delete', state: del, idPrefix: `del-${r.uuid}` })}
                </details>
              </li>`;
            })}
          </ul>`
        : html`<p class="muted">No rules: no operation is rate-limited.</p>`
    }
    ${pager('/admin/rate-limits', w.page, rules.length > w.perPage)}
    <h2 id="new-rule-h">Add a rule</h2>
    ${formMessage(forms.new)}
    <form class="stack" method="post" action="/admin/rate-limits" aria-labelledby="new-rule-h">
      ${csrfField(c)} ${ruleFields(forms.new, null, 'new-rule')}
      <div><button type="submit" class="primary">Add rule</button></div>
    </form>`;
  return adminPage(c, 'rate-limits', 'Rate limits', body);
}

async function settingsPage(deps: Deps, c: PageCaller, state?: FormState, saved = false): Promise<Html> {
  const s = await getSettings(deps, c.viewer);
  const body = html`${saved ? html`<p class="box" role="status">Settings saved.</p>` : ''} ${formMessage(state)}
    <form class="stack" method="post" action="/admin/settings">
      ${csrfField(c)}
      <fieldset class="stack">
        <legend>Signup</legend>
        ${field(state, { name: 'signups_enabled', label: 'Anyone may sign up at /signup', type: 'checkbox', value: s.signups_enabled })}
        ${field(state, { name: 'signups_require_invite', label: 'Signing up needs an invite', type: 'checkbox', value: s.signups_require_invite })}
        ${field(state, {
          name: 'signup_invite_creators',
          label: 'Who may create invites',
          type: 'select',
          value: s.signup_invite_creators,
          options: INVITE_CREATORS.map((v) => [v, v === 'staff' ? 'staff only' : 'staff and users'] as const),
        })}
        ${field(state, { name: 'signup_invite_max_per_24h', label: 'Invites one user may create in 24 hours', type: 'number', value: s.signup_invite_max_per_24h })}
        ${field(state, {
          name: 'signup_invite_min_account_age',
          label: 'Minimum account age to create invites',
          value: s.signup_invite_min_account_age,
          hint: 'A duration such as 7d, 12h or 1d12h.',
        })}
      </fieldset>
      <fieldset class="stack">
        <legend>Limits</legend>
        ${field(state, { name: 'rate_limits_enabled', label: 'Enforce the rate-limit rules', type: 'checkbox', value: s.rate_limits_enabled })}
        ${field(state, { name: 'max_timers_per_owner', label: 'Unfinished timers per owner', type: 'number', value: s.max_timers_per_owner })}
        ${field(state, { name: 'max_reply_versions', label: 'Versions per reply', type: 'number', value: s.max_reply_versions })}
      </fieldset>
      <fieldset class="stack">
        <legend>Webhooks</legend>
        ${field(state, {
          name: 'webhook_allowed_hosts',
          label: 'Allowed internal webhook targets',
          type: 'textarea',
          value: s.webhook_allowed_hosts.join('\n'),
          hint: 'One per line: host names, IP addresses or CIDR ranges (127.0.0.1, 10.0.0.0/8) that hooks may reach although they are internal.',
        })}
      </fieldset>
      <div><button type="submit" class="primary">Save settings</button></div>
    </form>`;
  return adminPage(c, 'settings', 'Site settings', body);
}

const ruleInput = (b: Record<string, unknown>) => ({
  scope: b.scope,
  max_requests: int(b.max_requests as string | undefined),
  window_seconds: int(b.window_seconds as string | undefined),
  is_enabled: checked(b.is_enabled),
});

/** Staff pages of rate-limit rules and site settings (README "Web interface"). */
export async function adminLimitPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const opts = (schema: Record<string, unknown>) => ({ config: { public: true }, schema: { hide: true, ...schema } });

  app.get('/admin/rate-limits', opts({ querystring: ListQuery }), async (request, reply) => {
    const c = requirePage(request);
    return sendPage(reply, await rulesPage(deps, c, request.query as { page?: number }));
  });

  app.post('/admin/rate-limits', opts({ body: RuleForm }), async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as Record<string, unknown>;
    const result = await attempt(typedForm(b), RULE_FIELDS, () =>
      createRule(deps, c.viewer, apiBody(CreateRuleBody, ruleInput(b))),
    );
    if (!result.ok) return sendPage(reply, await rulesPage(deps, c, {}, { new: result.state }), result.state.status);
    return seeOther(reply, '/admin/rate-limits');
  });

  app.post('/admin/rate-limits/:uuid', opts({ params: UuidParams, body: RuleForm }), async (request, reply) => {
    const c = requirePage(request);
    const uuid = (request.params as { uuid: string }).uuid;
    const b = request.body as Record<string, unknown>;
    const result = await attempt(typedForm(b), RULE_FIELDS, () =>
      updateRule(deps, c.viewer, uuid, apiBody(UpdateRuleBody, ruleInput(b))),
    );
    if (!result.ok)
      return sendPage(reply, await rulesPage(deps, c, {}, { edit: { uuid, state: result.state } }), result.state.status);
    return seeOther(reply, '/admin/rate-limits');
  });

  app.post('/admin/rate-limits/:uuid/delete', opts({ params: UuidParams, body: DeleteForm }), async (request, reply) => {
    const c = requirePage(request);
    const uuid = (request.params as { uuid: string }).uuid;
    const typed = (request.body as { confirm?: string }).confirm ?? '';
    if (typed.trim() !== 'delete') {
      await getRule(deps, c.viewer, uuid);
      const state: FormState = {
        ...emptyForm({ confirm: typed }),
        errors: { confirm: 'Type delete to confirm: the rule was not deleted.' },
        status: 400,
      };
      return sendPage(reply, await rulesPage(deps, c, {}, { del: { uuid, state } }), 400);
    }
    await deleteRule(deps, c.viewer, uuid);
    return seeOther(reply, '/admin/rate-limits');
  });

  app.get(
    '/admin/settings',
    opts({ querystring: Type.Object({ saved: Text(1) }, { additionalProperties: false }) }),
    async (request, reply) => {
      const c = requirePage(request);
      return sendPage(reply, await settingsPage(deps, c, undefined, (request.query as { saved?: string }).saved === '1'));
    },
  );

  app.post('/admin/settings', opts({ body: SettingsForm }), async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as Record<string, string | string[] | undefined>;
    const text = (k: string) => (typeof b[k] === 'string' ? (b[k] as string) : undefined);
    const result = await attempt(typedForm(b), SETTINGS_FIELDS, () => {
      const input = apiBody(UpdateSiteSettingsBody, {
        rate_limits_enabled: checked(b.rate_limits_enabled),
        signups_enabled: checked(b.signups_enabled),
        signups_require_invite: checked(b.signups_require_invite),
        ...(text('signup_invite_creators') === undefined ? {} : { signup_invite_creators: text('signup_invite_creators') }),
        ...(text('signup_invite_max_per_24h') === undefined
          ? {}
          : { signup_invite_max_per_24h: int(text('signup_invite_max_per_24h')) }),
        ...(text('signup_invite_min_account_age') === undefined
          ? {}
          : { signup_invite_min_account_age: text('signup_invite_min_account_age')!.trim() }),
        ...(text('max_timers_per_owner') === undefined ? {} : { max_timers_per_owner: int(text('max_timers_per_owner')) }),
        ...(text('max_reply_versions') === undefined ? {} : { max_reply_versions: int(text('max_reply_versions')) }),
        ...(text('webhook_allowed_hosts') === undefined
          ? {}
          : {
              webhook_allowed_hosts: text('webhook_allowed_hosts')!
                .split(/[\s,]+/)
                .map((h) => h.trim())
                .filter(Boolean),
            }),
      });
      return updateSettings(deps, c.viewer, input);
    });
    if (!result.ok) return sendPage(reply, await settingsPage(deps, c, result.state), result.state.status);
    return seeOther(reply, '/admin/settings?saved=1');
  });
}
