import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { createFork } from '../forks/service.ts';
import { CreateRepoBody } from '../repos/schemas.ts';
import { createRepo, getRepo, listPublicRepos } from '../repos/service.ts';
import { CreateTeamBody } from '../teams/schemas.ts';
import { createTeam, listTeams } from '../teams/service.ts';
import { type PageCaller, pageWindow, readerPage, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, emptyForm, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, pager, seg } from './html.ts';
import { repoHref, repoItem } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { pageRoute } from './page-route.ts';
import { pageRepoRef, repoRoute } from './repo-common.ts';
import { FormBody, type FormFields, checkBody, text } from './settings-common.ts';

const REPO_FIELDS = [
  'owner',
  'name',
  'slug',
  'description',
  'visibility',
  'import_url',
  'import_username',
  'import_password',
] as const;
const TEAM_FIELDS = ['name', 'slug'] as const;
const ExploreQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);

/**
 * The owners a caller may create a repo (or a fork) in, as select options: themselves, then the
 * teams they belong to (the service decides: a team where they may not create answers 403 beside the field).
 */
async function ownerOptions(deps: Deps, c: PageCaller): Promise<Array<readonly [string, string]>> {
  const teams = await listTeams(deps, c.viewer, { offset: 0, limit: 100 });
  return [
    [`user:${c.viewer.username}`, `${c.viewer.username} (you)`],
    ...teams.map((t) => [`team:${t.slug}`, `${t.slug} (team)`] as const),
  ];
}

const ownerOf = (value: string, c: PageCaller): { kind: 'team' | 'user'; name: string } => {
  const [kind, ...rest] = value.split(':');
  const name = rest.join(':');
  return kind === 'team' && name ? { kind: 'team', name } : { kind: 'user', name: c.viewer.username };
};

/**
 * Creating from the pages (README "Web interface"): a new repo (`/new`), a new team
 * (`/teams/new`), a fork (the repo page's Fork form), and the Explore page of public repos. Each
 * form checks its input against the API route's body schema and calls the same service, so a
 * refusal carries the API's words, shown beside the field with what was typed kept.
 */
export async function createPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const newRepoPage = async (reply: FastifyReply, c: PageCaller, state: FormState) => {
    const owners = await ownerOptions(deps, c);
    const body = html`<h1>New repo</h1>
      ${formMessage(state)}
      <form class="stack" method="post" action="/new">
        ${csrfField(c)}
        ${field(state, { name: 'owner', label: 'Owner', type: 'select', options: owners, value: owners[0]?.[0] ?? '' })}
        ${field(state, { name: 'name', label: 'Name', required: true, maxlength: 100 })}
        ${field(state, {
          name: 'slug',
          label: 'Slug (optional)',
          maxlength: 100,
          hint: 'The repo’s address: lower-case letters, digits, dots, dashes and underscores. Empty: made from the name.',
        })}
        ${field(state, { name: 'description', label: 'Description (optional)', maxlength: 1000 })}
        ${field(state, {
          name: 'visibility',
          label: 'Visibility',
          type: 'select',
          value: 'private',
          options: [
            ['private', 'Private: the owner’s members only'],
            ['public', 'Public: every signed-in user, and clones without credentials'],
          ],
        })}
        <fieldset class="stack">
          <legend>Import from a URL (optional)</legend>
          ${field(state, {
            name: 'import_url',
            label: 'Source URL',
            maxlength: 2000,
            hint: 'http(s)://, ssh:// or git://: every branch and tag is copied in the background.',
          })}
          ${field(state, { name: 'import_username', label: 'Username (optional)', maxlength: 255 })}
          ${field(state, {
            name: 'import_password',
            label: 'Password or token (optional)',
            type: 'password',
            maxlength: 4096,
            hint: 'Stored encrypted; never shown again.',
          })}
          ${field(state, { name: 'import_mirror', label: 'Keep it as a mirror that follows the source', type: 'checkbox' })}
        </fieldset>
        <div><button type="submit" class="primary">Create repo</button></div>
      </form>`;
    return sendPage(reply, layout({ title: 'New repo', caller: c }, body), state.status);
  };

  pageRoute(app, 'GET', '/new', {}, {}, async (request, reply) => newRepoPage(reply, requirePage(request), emptyForm()));

  pageRoute(app, 'POST', '/new', {}, { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as FormFields;
    const owner = ownerOf(text(b, 'owner'), c);
    const name = text(b, 'name').trim();
    const input = {
      name,
      slug: text(b, 'slug').trim() || slugFrom(name),
      ...(text(b, 'description').trim() ? { description: text(b, 'description').trim() } : {}),
      visibility: text(b, 'visibility') === 'public' ? ('public' as const) : ('private' as const),
      ...(text(b, 'import_url').trim()
        ? {
            import: {
              url: text(b, 'import_url').trim(),
              ...(text(b, 'import_username').trim() ? { username: text(b, 'import_username').trim() } : {}),
              ...(text(b, 'import_password') ? { password: text(b, 'import_password') } : {}),
              mirror: text(b, 'import_mirror') === 'on',
            },
          }
        : {}),
    };
    const done = await attempt(typedValues(b), REPO_FIELDS, async () => {
      checkBody(CreateRepoBody, input);
      return createRepo(deps, c.viewer, owner.kind, owner.name, input);
    });
    if (!done.ok) {
      // "not allowed to create repos in this team" concerns the owner field
      if (done.state.status === 403) done.state.errors = { owner: done.state.message ?? '' };
      if (done.state.status === 403) done.state.message = undefined;
      // a refused source URL concerns its field
      if (done.state.status === 400 && input.import && /url/.test(done.state.message ?? '')) {
        done.state.errors = { import_url: done.state.message ?? '' };
        done.state.message = undefined;
      }
      return newRepoPage(reply, c, done.state);
    }
    return seeOther(reply, input.import ? `${repoHref(done.value)}/import` : repoHref(done.value));
  });

  const newTeamPage = (reply: FastifyReply, c: PageCaller, state: FormState) =>
    sendPage(
      reply,
      layout(
        { title: 'New team', caller: c },
        html`<h1>New team</h1>
          ${formMessage(state)}
          <form class="stack" method="post" action="/teams/new">
            ${csrfField(c)} ${field(state, { name: 'name', label: 'Name', required: true, maxlength: 100 })}
            ${field(state, {
              name: 'slug',
              label: 'Slug (optional)',
              maxlength: 100,
              hint: 'The team’s address. Empty: made from the name.',
            })}
            <div><button type="submit" class="primary">Create team</button></div>
          </form>`,
      ),
      state.status,
    );

  pageRoute(app, 'GET', '/teams/new', {}, {}, async (request, reply) => newTeamPage(reply, requirePage(request), emptyForm()));

  pageRoute(app, 'POST', '/teams/new', {}, { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as FormFields;
    const name = text(b, 'name').trim();
    const input = { name, slug: text(b, 'slug').trim() || slugFrom(name) };
    const done = await attempt(typedValues(b), TEAM_FIELDS, async () => {
      checkBody(CreateTeamBody, input);
      return createTeam(deps, c.viewer, input);
    });
    if (!done.ok) return newTeamPage(reply, c, done.state);
    return seeOther(reply, `/teams/${seg(done.value.slug)}`);
  });

  // A fork, into the caller's own namespace or one of their teams; a refusal answers the fork page.
  const forkPage = async (reply: FastifyReply, c: PageCaller, action: string, fullName: string, state: FormState) => {
    const owners = await ownerOptions(deps, c);
    return sendPage(
      reply,
      layout(
        { title: `Fork ${fullName}`, caller: c },
        html`<h1>Fork ${fullName}</h1>
          ${formMessage(state)}${forkForm(c, action, owners, state)}`,
      ),
      state.status,
    );
  };

  repoRoute(app, 'GET', '/fork', {}, async (request, reply) => {
    const c = requirePage(request);
    const repo = await getRepo(deps, c.viewer, pageRepoRef(request));
    return forkPage(reply, c, `${repoHref(repo)}/fork`, repo.full_name, emptyForm());
  });

  repoRoute(app, 'POST', '/fork', { body: FormBody }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const b = request.body as FormFields;
    const owner = ownerOf(text(b, 'owner'), c);
    const done = await attempt(typedValues(b), ['owner'], () =>
      createFork(deps, c.viewer, ref, owner.kind === 'team' ? owner.name : undefined),
    );
    if (!done.ok) {
      const repo = await getRepo(deps, c.viewer, ref);
      done.state.errors = { owner: done.state.message ?? Object.values(done.state.errors)[0] ?? '' };
      done.state.message = undefined;
      return forkPage(reply, c, `${repoHref(repo)}/fork`, repo.full_name, done.state);
    }
    return seeOther(reply, repoHref(done.value.repo));
  });

  // signed out too: public repos are browsable without an account (README "Web interface")
  pageRoute(app, 'GET', '/explore', {}, { querystring: ExploreQuery }, async (request, reply) => {
    const c = readerPage(request);
    const w = pageWindow(request.query as { page?: number });
    const repos = await listPublicRepos(deps, c.viewer, w);
    const body = html`<h1>Explore</h1>
      <p class="muted">Public repos, newest first.</p>
      ${
        repos.length
          ? html`<ul class="plain">
              ${repos.slice(0, w.perPage).map(repoItem)}
            </ul>`
          : html`<p class="muted">No public repos yet.</p>`
      }
      ${pager('/explore', w.page, repos.length > w.perPage)}`;
    return sendPage(reply, layout({ title: 'Explore', caller: c }, body));
  });
}

/** The repo page's Fork form: the owner to fork into, then the button. */
export function forkForm(
  c: PageCaller,
  action: string,
  owners: ReadonlyArray<readonly [string, string]>,
  state?: FormState,
): Html {
  return html`<form class="row" method="post" action="${action}">
    ${csrfField(c)}
    ${field(state, { name: 'owner', label: 'Fork into', type: 'select', options: owners, value: owners[0]?.[0] ?? '', idPrefix: 'fork' })}
    <button type="submit">Fork</button>
  </form>`;
}

/** A slug made from a name, as a person would type it ("My Repo" → "my-repo"). */
export function slugFrom(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 100);
}
