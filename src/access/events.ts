/**
 * Event privacy (README "Event privacy"): what one caller may see of a stored event. Every reader
 * of the store (GET /events, GET /events/{id}, the activity feeds, the live stream) passes each
 * event through `eventViewer(...)`, built once per request (or per stream, refreshed), so the
 * same scope is checked once however many events name it.
 *
 * - An event is shown when the caller may read its subject (src/events/kinds.ts), or, for a kind
 *   whose subject is its scopes, one of its scopes.
 *   A kind may ask for a team role on a team subject (`teamRole`: a team timer's firing, a
 *   deleted inactive team repo).
 * - What else it names (a fork's source, a membership's team, ...) is redacted where the caller
 *   may not read it: uuid and name fields set to null, list entries dropped. `scopes` drop every
 *   repo, team, timer and repo-part scope the caller may not read; an event about a readable repo
 *   keeps the repo's parts (pull, review, thread, reply) and its owner's scope, which the repo
 *   record names anyway.
 * - A token restricted to repos sees no event whose repo scopes are all outside its list, a
 *   deleted repo's included (whose `repo-deleted` has its owner as subject).
 * - Users are not hidden things: a username is shown by the resource routes the caller can read
 *   (pull authors, reviewers, team members), a deactivated user's included; so `user:` scopes and
 *   user fields stay (reading a user's scope is still for that user and staff only). Staff see
 *   every event as stored while one of its scopes exists (a deleted repo's pull events are gone
 *   for them too).
 */
import type { Deps } from '../deps.ts';
import { KIND_RULES, type KindRule, type NamedRef, isEventKind, payloadAt } from '../events/kinds.ts';
import { scopeChecker } from '../events/scopes.ts';
import type { EventRecord } from '../events/service.ts';
import type { Viewer } from '../viewer.ts';
import { type TeamRole, roleAtLeast, teamRole } from './levels.ts';

/**
 * Scope kinds that, in an event about a readable repo, belong to that repo (its parts, and its
 * owner: repoScopes); kept without a check.
 */
const WITH_REPO = new Set(['pull', 'review', 'thread', 'reply', 'team']);

/** Shows one event to one caller: the event as the caller may see it, or null when it is hidden. */
export type EventViewer = (event: EventRecord) => Promise<EventRecord | null>;

/**
 * An event viewer that can also rule an event out from its scopes alone: `mayShow(scopes)` is
 * false only for an event `show` would hide (none of its scopes is readable, and an event's
 * subject is one of its scopes: `assertDeclaredEvent`), sharing `show`'s memo.
 */
export interface ScopeGatedViewer {
  show: EventViewer;
  mayShow: (scopes: string[]) => Promise<boolean>;
}

const NO_RULE: KindRule = { subject: () => 'repo:-', names: [] };

async function namedReadable(
  canRead: (scope: string) => Promise<boolean>,
  viewer: Viewer,
  event: EventRecord,
  ref: NamedRef,
  uuid: unknown,
): Promise<boolean> {
  if (ref.kind === 'user') return true;
  if (ref.shownTo !== undefined && payloadAt(event.payload, ref.shownTo) === viewer.uuid) return true;
  return typeof uuid === 'string' && canRead(`${ref.kind}:${uuid}`);
}

function setAt(payload: Record<string, unknown>, path: string, value: unknown): void {
  const [head, tail] = path.split('.', 2) as [string, string | undefined];
  if (tail === undefined) {
    if (head in payload) payload[head] = value;
    return;
  }
  const inner = payload[head];
  if (inner !== null && typeof inner === 'object' && tail in inner) {
    payload[head] = { ...(inner as Record<string, unknown>), [tail]: value };
  }
}

/** Whether an event names repos (in its scopes) and none of them is in a restricted token's list. */
function outsideRepos(repos: readonly string[], scopes: string[]): boolean {
  let named = false;
  for (const scope of scopes) {
    if (!scope.startsWith('repo:')) continue;
    if (repos.includes(scope.slice('repo:'.length))) return false;
    named = true;
  }
  return named;
}

async function someReadable(canRead: (scope: string) => Promise<boolean>, scopes: string[]): Promise<boolean> {
  for (const scope of scopes) if (await canRead(scope)) return true;
  return false;
}

/**
 * The event viewer of one caller. `knownReadable` lists scopes the caller is already known to
 * read (the scope a page or stream was opened on), sparing a check.
 */
export function eventViewer(deps: Deps, viewer: Viewer, knownReadable: string[] = []): EventViewer {
  return scopeGatedViewer(deps, viewer, knownReadable).show;
}

/** `eventViewer`, with the scopes-only pre-check a feed's scan uses (`ScopeGatedViewer`). */
export function scopeGatedViewer(deps: Deps, viewer: Viewer, knownReadable: string[] = []): ScopeGatedViewer {
  const check = scopeChecker(deps, viewer);
  const known = new Set(knownReadable);
  const canRead = (scope: string) => (known.has(scope) ? Promise.resolve(true) : check(scope));
  return { show: showFor(deps, viewer, canRead), mayShow: (scopes) => someReadable(canRead, scopes) };
}

function showFor(deps: Deps, viewer: Viewer, canRead: (scope: string) => Promise<boolean>): EventViewer {
  const roles = new Map<string, Promise<TeamRole | null>>();
  const roleIn = (teamUuid: string) => {
    let role = roles.get(teamUuid);
    if (!role) {
      role = teamRole(deps.db, viewer, teamUuid).catch(() => null);
      roles.set(teamUuid, role);
    }
    return role;
  };
  // An event private to one user (a user timer's) is that user's alone, staff included.
  const privateToOther = (event: EventRecord): boolean => {
    const only = isEventKind(event.kind) ? KIND_RULES[event.kind].onlyFor?.(event) : undefined;
    return only !== undefined && only !== null && only !== viewer.uuid;
  };
  // Staff read everything that exists: an event as stored, when one of its scopes still exists.
  // (A staff token restricted to repos goes by the rules below: its repos' events only.)
  if (viewer.isStaff && !viewer.repos)
    return async (event) => (!privateToOther(event) && (await someReadable(canRead, event.scopes)) ? event : null);
  return async (event) => {
    if (privateToOther(event)) return null;
    // A token restricted to repos sees no event about other repos, a deleted one's included
    // (whose scope no longer resolves, and whose subject may be its owner: repo-deleted).
    if (viewer.repos && outsideRepos(viewer.repos, event.scopes)) return null;
    // A kind without a rule (none is recorded since kinds.ts: see assertDeclaredKind) is hidden.
    const rule = isEventKind(event.kind) ? KIND_RULES[event.kind] : NO_RULE;
    const subject = rule.subject(event);
    let repoReadable: string | null = null;
    if (subject === null) {
      if (!(await someReadable(canRead, event.scopes))) return null;
    } else {
      if (!(await canRead(subject))) return null;
      const min = rule.teamRole?.(event) ?? null;
      if (min !== null && subject.startsWith('team:') && !roleAtLeast(await roleIn(subject.slice('team:'.length)), min))
        return null;
      if (subject.startsWith('repo:')) repoReadable = subject;
    }
    // a thing a `shownTo` field shows to this caller keeps its scope too
    const shown = new Set<string>();
    for (const ref of rule.names) {
      const uuid = payloadAt(event.payload, ref.uuid);
      if (ref.shownTo !== undefined && typeof uuid === 'string' && payloadAt(event.payload, ref.shownTo) === viewer.uuid)
        shown.add(`${ref.kind}:${uuid}`);
    }
    const scopes: string[] = [];
    for (const scope of event.scopes) {
      const kind = scope.slice(0, scope.indexOf(':'));
      if (kind === 'user' || shown.has(scope) || (repoReadable !== null && WITH_REPO.has(kind)) || (await canRead(scope)))
        scopes.push(scope);
    }
    let payload = event.payload;
    for (const ref of rule.names) {
      const value = payloadAt(payload, ref.uuid);
      if (value === null || value === undefined) continue;
      if (ref.list) {
        if (!Array.isArray(value)) continue;
        const kept: unknown[] = [];
        for (const uuid of value) if (await namedReadable(canRead, viewer, event, ref, uuid)) kept.push(uuid);
        if (kept.length !== value.length) {
          payload = { ...payload };
          setAt(payload, ref.uuid, kept);
        }
        continue;
      }
      if (await namedReadable(canRead, viewer, event, ref, value)) continue;
      payload = { ...payload };
      for (const path of [ref.uuid, ...ref.names]) setAt(payload, path, null);
    }
    if (payload === event.payload && scopes.length === event.scopes.length) return event;
    return { ...event, scopes, payload };
  };
}
