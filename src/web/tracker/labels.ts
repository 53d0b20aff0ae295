/**
 * A repo's labels page (docs/tracker.md "Pages"): its labels and its team's, each with how many
 * open issues carry it; create, edit and delete for maintainers (the service decides, as the API's
 * {repo}/labels routes do). Team labels are changed on the team's side (the API's /teams/{t}/labels).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.ts';
import { createLabel, deleteLabel, getLabel, type LabelJson, updateLabel } from '../../tracker/labels.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from '../context.ts';
import { attempt, dangerForm, emptyForm, field, formMessage, type FormState, typedValues } from '../forms.ts';
import { type Html, html } from '../html.ts';
import { repoHref } from '../home-pages.ts';
import { csrfField, layout } from '../layout.ts';
import { type PageRepo, pageRepo, pageRepoRef, repoHeader, repoRoute } from '../repo-common.ts';
import { contrast, issuesHref, labelChip, labelHref } from './common.ts';
import { allLabels } from './issues.ts';

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const LabelForm = Type.Object(
  {
    _csrf: Csrf,
    name: Type.String({ maxLength: 200 }),
    color: Type.String({ maxLength: 20 }),
    description: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
const NameParams = { name: Type.String({ minLength: 1, maxLength: 50 }) };
const DeleteForm = Type.Object({ _csrf: Csrf }, { additionalProperties: false });
const FIELDS = ['name', 'color', 'description'] as const;

/** A colour as typed (`#a2eeef`, `A2EEEF`): the API's 6 hex digits; anything else is left for the service to refuse. */
const colorOf = (v: string) => v.trim().replace(/^#/, '');

/** The label form's fields (create and edit). */
function labelFields(state: FormState | undefined, label?: LabelJson): Html {
  return html`${field(state, { name: 'name', label: 'Name', required: true, maxlength: 50, value: label?.name })}
  ${field(state, {
    name: 'color',
    label: 'Colour',
    required: true,
    maxlength: 7,
    value: label?.color ?? '0969da',
    hint: '6 hex digits such as a2eeef; the label name is always shown in the page text colour beside a swatch.',
  })}
  ${field(state, { name: 'description', label: 'Description', maxlength: 200, value: label?.description })}`;
}

/** How a colour reads as a swatch on a light and on a dark page. */
function contrastNote(color: string): Html {
  const light = contrast(color, 'ffffff');
  const dark = contrast(color, '0d1117');
  return html`<span class="muted small">contrast ${light.toFixed(1)}:1 on light, ${dark.toFixed(1)}:1 on dark</span>`;
}

async function labelsPage(deps: Deps, c: PageCaller, { at, repo, can }: PageRepo, state?: FormState): Promise<Html> {
  const base = repoHref(repo);
  const labels = await allLabels(deps, c.viewer, { repo: at });
  const maintain = can.manage && !repo.is_archived;
  const body = html`${repoHeader(repo, 'threads', can)}
    <div class="row">
      <h2 class="grow">Labels</h2>
      <a href="${base}/threads">Issues</a> <a href="${base}/milestones">Milestones</a>
    </div>
    ${
      labels.length
        ? html`<ul class="plain labels">
            ${labels.map(
              (l) =>
                html`<li class="row">
                  ${labelChip(l, issuesHref(base, { labels: l.name, state: 'all' }))}
                  <span class="muted">${l.description}</span>
                  ${l.scope === 'team' ? html`<span class="badge">team label</span>` : ''} ${contrastNote(l.color)}
                  ${maintain && l.scope === 'repo' ? html`<a href="${labelHref(base, l.name)}/edit">Edit ${l.name}</a>` : ''}
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No labels yet.</p>`
    }
    ${
      maintain
        ? html`<section class="box" aria-labelledby="new-label">
            <h2 id="new-label">New label</h2>
            <form class="stack" method="post" action="${base}/labels">
              ${csrfField(c)} ${formMessage(state)} ${labelFields(state)}
              <div><button type="submit" class="primary">Create label</button></div>
            </form>
          </section>`
        : ''
    }`;
  return layout({ title: `Labels · ${repo.full_name}`, caller: c }, body);
}

async function editPage(c: PageCaller, { repo, can }: PageRepo, label: LabelJson, state?: FormState) {
  const base = repoHref(repo);
  const body = html`${repoHeader(repo, 'threads', can)}
    <h2>Edit label ${labelChip(label)}</h2>
    <p><a href="${base}/labels">All labels</a></p>
    <form class="stack" method="post" action="${labelHref(base, label.name)}/edit">
      ${csrfField(c)} ${formMessage(state)} ${labelFields(state, label)}
      <div><button type="submit" class="primary">Save label</button></div>
    </form>
    <h3>Delete this label</h3>
    <p>Deleting removes it from every issue and pull.</p>
    ${dangerForm({ action: `${labelHref(base, label.name)}/delete`, csrf: c.csrf, label: `Delete ${label.name}` })}`;
  return layout({ title: `Label ${label.name} · ${repo.full_name}`, caller: c }, body);
}

export async function labelPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/labels', {}, async (request, reply) => {
    const c = requirePage(request);
    return sendPage(reply, await labelsPage(deps, c, await pageRepo(deps, c.viewer, request), emptyForm()));
  });

  repoRoute(app, 'POST', '/labels', { body: LabelForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const form = request.body as { name: string; color: string; description?: string };
    const result = await attempt(typedValues(request.body), FIELDS, () =>
      createLabel(
        deps,
        c.viewer,
        { repo: ref },
        { name: form.name, color: colorOf(form.color), description: form.description ?? '' },
      ),
    );
    const page = await pageRepo(deps, c.viewer, request);
    if (!result.ok) return sendPage(reply, await labelsPage(deps, c, page, result.state), result.state.status);
    return seeOther(reply, `${repoHref(page.repo)}/labels`);
  });

  repoRoute(app, 'GET', '/labels/:name/edit', { params: NameParams }, async (request, reply) => {
    const c = requirePage(request);
    const page = await pageRepo(deps, c.viewer, request);
    const label = await getLabel(deps, c.viewer, { repo: page.at }, (request.params as { name: string }).name);
    return sendPage(reply, await editPage(c, page, label));
  });

  repoRoute(app, 'POST', '/labels/:name/edit', { params: NameParams, body: LabelForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const { name } = request.params as { name: string };
    const form = request.body as { name: string; color: string; description?: string };
    const result = await attempt(typedValues(request.body), FIELDS, () =>
      updateLabel(deps, c.viewer, { repo: ref }, name, {
        name: form.name,
        color: colorOf(form.color),
        ...(form.description !== undefined ? { description: form.description } : {}),
      }),
    );
    const page = await pageRepo(deps, c.viewer, request);
    if (!result.ok) {
      const label = await getLabel(deps, c.viewer, { repo: page.at }, name);
      return sendPage(reply, await editPage(c, page, label, result.state), result.state.status);
    }
    return seeOther(reply, `${repoHref(page.repo)}/labels`);
  });

  repoRoute(app, 'POST', '/labels/:name/delete', { params: NameParams, body: DeleteForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    await deleteLabel(deps, c.viewer, { repo: ref }, (request.params as { name: string }).name);
    return seeOther(reply, `${repoHref((await pageRepo(deps, c.viewer, request)).repo)}/labels`);
  });
}
