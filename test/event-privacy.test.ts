/**
 * Event privacy (README "Event privacy"), as a generated matrix: a world of teams, users and
 * repos (public, private, forks in every direction, a deactivated user, an inactive team, an
 * is_active=false repo), at least one event of every kind the code emits (checked against
 * src/events/kinds.ts), then every caller role reads every scope any event carries, every event
 * by id and the activity feeds; no event shown may name a repo, team or timer the caller may not
 * read. What a caller may read is computed here from the world's own definition, not by asking
 * the code under test. The five leaks of issue 13 get their own tests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { EVENT_KINDS } from '../src/events/kinds.ts';
import { type EventKind } from '../src/events/kinds.ts';
import { inTransaction } from '../src/core/transaction.ts';
import { deliveredPayloadSchema } from '../src/hooks/openapi-webhooks.ts';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { EventJson, Person } from './common.ts';
import { makeWorkTree, gitClient, seedCommit } from './git-fixtures.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { eventFrames, listen, openSse } from './sse-client.ts';
import { ManualClock } from './timers-helpers.ts';
import { waitUntil } from './common.ts';
import { Receiver } from './webhooks-helpers.ts';

type Role = 'owner' | 'maintainer' | 'member' | 'reader';
const LEVEL: Record<Role, number> = { reader: 1, member: 2, maintainer: 3, owner: 4 };

interface UserM {
  uuid: string;
  username: string;
  staff: boolean;
  active: boolean;
  token: string;
}
interface TeamM {
  uuid: string;
  names: Set<string>;
  members: Map<string, Role>;
  active: boolean;
}
interface RepoM {
  uuid: string;
  ownerKind: 'team' | 'user';
  ownerUuid: string;
  visibility: 'public' | 'private';
  active: boolean;
  deleted: boolean;
  fullNames: Set<string>;
  base: string;
}
interface TimerM {
  uuid: string;
  kind: 'user' | 'team' | 'repo';
  ownerUuid: string;
  deleted?: boolean;
}

/** The world as the test defines it, and who may read what in it (docs/behaviour.md). */
class World {
  users = new Map<string, UserM>();
  teams = new Map<string, TeamM>();
  repos = new Map<string, RepoM>();
  timers = new Map<string, TimerM>();
  /** pull, review, thread and reply uuids → their repo */
  parts = new Map<string, string>();

  level(c: UserM | null, r: RepoM, asIfLive = false): number {
    if (!c) return 0;
    if (r.deleted && !asIfLive) return 0;
    if (c.staff) return 4;
    let level = 0;
    if (r.ownerKind === 'user' && r.ownerUuid === c.uuid) level = 4;
    if (r.ownerKind === 'team') {
      const role = this.teams.get(r.ownerUuid)!.members.get(c.uuid);
      if (role) level = LEVEL[role];
    }
    if (level === 0 && r.visibility === 'public') {
      if (r.ownerKind === 'user' && !this.users.get(r.ownerUuid)!.active) return 0;
      level = 1;
    }
    if (!r.active && level < 3) return 0;
    return level;
  }
  /** May read the repo now (its scope). */
  repoReadable(c: UserM | null, uuid: string): boolean {
    const r = this.repos.get(uuid);
    return r !== undefined && this.level(c, r) >= 1;
  }
  /** May be told of the repo: readable now, or (deleted) readable when it was deleted. */
  repoNameable(c: UserM | null, uuid: string): boolean {
    const r = this.repos.get(uuid);
    return r !== undefined && this.level(c, r, true) >= 1;
  }
  teamReadable(c: UserM | null, uuid: string): boolean {
    const t = this.teams.get(uuid);
    return c !== null && t !== undefined && (c.staff || t.members.has(c.uuid));
  }
  /** A team is named by the records of the repos it owns. */
  teamNameable(c: UserM | null, uuid: string): boolean {
    if (this.teamReadable(c, uuid)) return true;
    for (const r of this.repos.values()) if (r.ownerUuid === uuid && this.repoNameable(c, r.uuid)) return true;
    return false;
  }
  timerReadable(c: UserM | null, uuid: string): boolean {
    return this.timers.get(uuid)?.deleted !== true && this.timerNameable(c, uuid);
  }
  /** May be told of the timer: may read it, or (deleted) could read it while it existed. */
  timerNameable(c: UserM | null, uuid: string): boolean {
    const tm = this.timers.get(uuid);
    if (!c || !tm) return false;
    if (tm.kind === 'user') return tm.ownerUuid === c.uuid;
    if (tm.kind === 'team') return c.staff || this.teams.get(tm.ownerUuid)!.members.get(c.uuid) === 'owner';
    return this.repoReadable(c, tm.ownerUuid);
  }
  userReadable(c: UserM | null, uuid: string): boolean {
    return c !== null && (c.staff || c.uuid === uuid) && this.users.has(uuid);
  }
  scopeReadable(c: UserM | null, scope: string): boolean {
    const [kind, id] = scope.split(':') as [string, string];
    if (kind === 'user') return this.userReadable(c, id);
    if (kind === 'team') return this.teamReadable(c, id);
    if (kind === 'repo') return this.repoReadable(c, id);
    if (kind === 'timer') return this.timerReadable(c, id);
    const repo = this.parts.get(id);
    return repo !== undefined && this.repoReadable(c, repo);
  }

  /** Everything an event shown to `c` names that `c` may not read; empty when it leaks nothing. */
  leaks(c: UserM, e: EventJson): string[] {
    if (c.staff) return [];
    const found: string[] = [];
    // a membership event names its team to the member it concerns (README "Event privacy")
    const ownMembership = e.kind.startsWith('member-') && e.payload.user_uuid === c.uuid;
    const hiddenRepoNames = new Map<string, boolean>();
    for (const r of this.repos.values()) {
      const hidden = !this.repoNameable(c, r.uuid);
      for (const n of r.fullNames) hiddenRepoNames.set(n, (hiddenRepoNames.get(n) ?? true) && hidden);
    }
    const hiddenTeamNames = new Map<string, boolean>();
    for (const t of this.teams.values()) {
      const hidden = !this.teamNameable(c, t.uuid);
      for (const n of t.names) hiddenTeamNames.set(n, (hiddenTeamNames.get(n) ?? true) && hidden);
    }
    const check = (value: string, where: string) => {
      if (this.repos.has(value) && !this.repoNameable(c, value)) found.push(`${where}: repo ${value}`);
      if (this.teams.has(value) && !this.teamNameable(c, value) && !ownMembership) found.push(`${where}: team ${value}`);
      if (this.timers.has(value) && !this.timerNameable(c, value)) found.push(`${where}: timer ${value}`);
      if (hiddenRepoNames.get(value) === true) found.push(`${where}: repo name ${value}`);
      if (hiddenTeamNames.get(value) === true && !ownMembership) found.push(`${where}: team name ${value}`);
    };
    const walk = (v: unknown, where: string) => {
      if (typeof v === 'string') check(v, where);
      else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${where}[${i}]`));
      else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, `${where}.${k}`);
    };
    walk(e.payload, 'payload');
    for (const scope of e.scopes) {
      const [kind, id] = scope.split(':') as [string, string];
      const ok =
        kind === 'user' ||
        (kind === 'repo' && this.repoNameable(c, id)) ||
        (kind === 'team' && (this.teamNameable(c, id) || ownMembership)) ||
        (kind === 'timer' && this.timerReadable(c, id)) ||
        (['pull', 'review', 'thread', 'reply'].includes(kind) && this.repoNameable(c, this.parts.get(id) ?? '-'));
      if (!ok) found.push(`scopes: ${scope}`);
    }
    return found;
  }
}

const ok = (res: Res, status = 200, what = ''): Res => {
  assert.equal(res.status, status, `${what} ${res.text}`);
  return res;
};

for (const dialect of DIALECTS) {
  describe(`event privacy matrix (${dialect})`, () => {
    let t: TestApp;
    const w = new World();
    const clock = new ManualClock(Date.now());
    const u: Record<string, UserM> = {};
    const req = (method: string, url: string, token: string | null, body?: unknown) =>
      t.req(method, `/api/v1${url}`, body === undefined ? { token } : { token, body });

    const addUser = async (name: string, staff = false) => {
      const p: Person = await t.user(name, { staff });
      u[name] = { uuid: p.uuid, username: p.username, staff, active: true, token: p.token };
      w.users.set(p.uuid, u[name]!);
      return u[name]!;
    };
    const addTeam = async (owner: UserM, slug: string) => {
      const res = ok(await req('POST', '/teams', owner.token, { name: `Team ${slug}`, slug }), 201, 'team');
      w.teams.set(res.body.uuid, {
        uuid: res.body.uuid,
        names: new Set([slug, `Team ${slug}`]),
        members: new Map([[owner.uuid, 'owner']]),
        active: true,
      });
      return res.body.uuid as string;
    };
    const addMember = async (teamUuid: string, slug: string, who: UserM, role: Role) => {
      ok(await req('POST', `/teams/${slug}/members`, t.adminToken, { username: who.username, role }), 201, 'member');
      w.teams.get(teamUuid)!.members.set(who.uuid, role);
    };
    const track = (json: {
      uuid: string;
      full_name: string;
      visibility: 'public' | 'private';
      owner: { kind: 'team' | 'user'; uuid: string; slug_or_username: string };
      slug: string;
    }) => {
      const base = `/${json.owner.kind === 'team' ? 'teams' : 'users'}/${json.owner.slug_or_username}/repos/${json.slug}`;
      const r: RepoM = {
        uuid: json.uuid,
        ownerKind: json.owner.kind,
        ownerUuid: json.owner.uuid,
        visibility: json.visibility,
        active: true,
        deleted: false,
        fullNames: new Set([json.full_name]),
        base,
      };
      w.repos.set(r.uuid, r);
      return r;
    };
    const addRepo = async (by: UserM, ns: string, slug: string, visibility: 'public' | 'private') => {
      const res = ok(await req('POST', `/${ns}/repos`, by.token, { name: `Repo ${ns}/${slug}`, slug, visibility }), 201, 'repo');
      return track(res.body);
    };
    const fork = async (by: UserM, source: RepoM, team?: string) => {
      const res = ok(await req('POST', `${source.base}/forks${team ? `?team=${team}` : ''}`, by.token), 201, 'fork');
      return track(res.body.repo);
    };
    const setVisibility = async (by: UserM, r: RepoM, visibility: 'public' | 'private') => {
      ok(await req('PUT', r.base, by.token, { visibility }), 200, 'visibility');
      r.visibility = visibility;
    };

    /** Every repo-part event kind on one repo, through the API. */
    const repoLife = async (r: RepoM, writer: UserM, maint: UserM) => {
      const th = ok(await req('POST', `${r.base}/threads`, writer.token, { title: 'A thread', body: 'text' }), 201).body;
      w.parts.set(th.uuid, r.uuid);
      ok(await req('PATCH', `${r.base}/threads/${th.number}`, writer.token, { title: 'Renamed' }));
      // the issue tracker: labels, milestones, a thread's state, lock, labels, assignees, milestone
      ok(await req('POST', `${r.base}/labels`, maint.token, { name: 'bug', color: 'ff0000' }), 201, 'label');
      ok(await req('PATCH', `${r.base}/labels/bug`, maint.token, { description: 'a bug' }), 200, 'label update');
      const ms = ok(await req('POST', `${r.base}/milestones`, maint.token, { title: 'v1' }), 201, 'milestone').body;
      const tracked = { labels: ['bug'], assignees: [maint.username], milestone: ms.number, locked: true, state: 'closed' };
      ok(await req('PATCH', `${r.base}/threads/${th.number}`, maint.token, tracked), 200, 'track');
      const untracked = { labels: [], assignees: [], milestone: null, locked: false, state: 'open' };
      ok(await req('PATCH', `${r.base}/threads/${th.number}`, maint.token, untracked), 200, 'untrack');
      ok(await req('PATCH', `${r.base}/milestones/${ms.number}`, maint.token, { description: 'first' }), 200, 'milestone update');
      const rep = ok(await req('POST', `${r.base}/threads/${th.number}/replies`, writer.token, { body: 'a reply' }), 201).body;
      w.parts.set(rep.uuid, r.uuid);
      ok(await req('PATCH', `${r.base}/threads/${th.number}/replies/${rep.number}`, writer.token, { body: 'edited' }));
      const up = ok(
        await t.req('POST', `/api/v1${r.base}/uploads?filename=a.txt`, {
          token: writer.token,
          rawBody: `data ${r.uuid}`,
          headers: { 'content-type': 'text/plain' },
        }),
        201,
        'upload',
      ).body;
      const group = ok(await req('POST', `${r.base}/upload-groups`, writer.token, { name: 'Shots' }), 201).body;
      ok(await req('POST', `${r.base}/threads/${th.number}/attachments`, writer.token, { upload_uuid: up.uuid }), 201, 'attach');
      ok(await req('DELETE', `${r.base}/threads/${th.number}/attachments/${up.uuid}`, writer.token), 204, 'detach');
      ok(await req('DELETE', `${r.base}/uploads/${up.uuid}`, writer.token), 204);
      ok(await req('DELETE', `${r.base}/upload-groups/${group.uuid}`, writer.token), 204);
      ok(await req('DELETE', `${r.base}/threads/${th.number}/replies/${rep.number}`, writer.token), 204);
      ok(await req('DELETE', `${r.base}/threads/${th.number}`, writer.token), 204);
      const prot = ok(await req('POST', `${r.base}/protections`, maint.token, { branch: 'main' }), 201, 'protection').body;
      ok(await req('PUT', `${r.base}/protections/${prot.uuid}`, maint.token, { required_approvals: 2 }));
      ok(await req('POST', `${r.base}/protections/${prot.uuid}/approvers`, maint.token, { username: writer.username }), 201);
      ok(await req('DELETE', `${r.base}/protections/${prot.uuid}/approvers/${writer.uuid}`, maint.token), 204);
      ok(await req('DELETE', `${r.base}/protections/${prot.uuid}`, maint.token), 204);
      const featureSha = await seedCommit(t, r.uuid, 'feature', { onto: 'main' });
      ok(await req('POST', `${r.base}/statuses/${featureSha}`, writer.token, { state: 'success', context: 'ci' }), 201, 'status');
      // CI: a dispatched run (run-created), cancelled (job-completed, run-completed)
      const workflow = 'name: W\non: workflow_dispatch\njobs:\n  a:\n    runs-on: linux\n    steps:\n      - run: echo\n';
      await seedCommit(t, r.uuid, 'ci', { onto: 'main', path: '.weft/workflows/w.yml', content: workflow });
      const run = ok(
        await req('POST', `${r.base}/workflows/w.yml/dispatches`, writer.token, { ref: 'ci' }),
        201,
        'dispatch',
      ).body;
      ok(await req('POST', `${r.base}/runs/${run.number}/cancel`, writer.token), 200, 'cancel run');
      // releases: published, updated, deleted
      ok(await req('POST', `${r.base}/releases`, writer.token, { tag_name: 'v1', target_commitish: featureSha }), 201, 'release');
      ok(await req('PATCH', `${r.base}/releases/v1`, writer.token, { body: 'notes' }), 200, 'release update');
      ok(await req('DELETE', `${r.base}/releases/v1`, writer.token), 204, 'release delete');
      const pull = ok(
        await req('POST', `${r.base}/pulls`, writer.token, {
          title: 'P',
          body: 'b',
          source_branch: 'feature',
          target_branch: 'main',
        }),
        201,
        'pull',
      ).body;
      w.parts.set(pull.uuid, r.uuid);
      ok(await req('PUT', `${r.base}/pulls/${pull.number}`, writer.token, { title: `P2 for #${th.number}` }));
      const pointer = { title: 'Pointer', body: `see !${pull.number}` };
      w.parts.set(ok(await req('POST', `${r.base}/threads`, writer.token, pointer), 201).body.uuid, r.uuid);
      const pullTracked = { labels: ['bug'], assignees: [maint.username], milestone: ms.number, draft: true };
      ok(await req('PUT', `${r.base}/pulls/${pull.number}`, maint.token, pullTracked), 200, 'pull track');
      const reviewers = { usernames: [maint.username] };
      if (maint !== writer) {
        ok(await req('POST', `${r.base}/pulls/${pull.number}/requested-reviewers`, writer.token, reviewers), 200, 'request');
        ok(await req('DELETE', `${r.base}/pulls/${pull.number}/requested-reviewers`, writer.token, reviewers), 200, 'unrequest');
      }
      const pullUntracked = { labels: [], assignees: [], milestone: null, draft: false };
      ok(await req('PUT', `${r.base}/pulls/${pull.number}`, maint.token, pullUntracked), 200, 'pull untrack');
      // auto-merge on (a protection keeps the pull from merging at once), then off
      const guard = ok(await req('POST', `${r.base}/protections`, maint.token, { branch: 'main' }), 201, 'guard').body;
      ok(await req('PUT', `${r.base}/pulls/${pull.number}/auto-merge`, writer.token, {}), 200, 'auto-merge on');
      ok(await req('DELETE', `${r.base}/pulls/${pull.number}/auto-merge`, writer.token), 204, 'auto-merge off');
      ok(await req('DELETE', `${r.base}/protections/${guard.uuid}`, maint.token), 204);
      ok(await req('PATCH', `${r.base}/milestones/${ms.number}`, maint.token, { state: 'closed' }), 200, 'milestone close');
      ok(await req('DELETE', `${r.base}/milestones/${ms.number}`, maint.token), 204, 'milestone delete');
      ok(await req('DELETE', `${r.base}/labels/bug`, maint.token), 204, 'label delete');
      const review = ok(
        await req('POST', `${r.base}/pulls/${pull.number}/reviews`, maint.token, { status: 'commented' }),
        201,
      ).body;
      w.parts.set(review.uuid, r.uuid);
      ok(await req('DELETE', `${r.base}/pulls/${pull.number}/reviews/${review.uuid}`, maint.token), 204);
      const review2 = ok(
        await req('POST', `${r.base}/pulls/${pull.number}/reviews`, maint.token, { status: 'commented' }),
        201,
      ).body;
      w.parts.set(review2.uuid, r.uuid);
      // code review on lines: a comment, a reply, an edit, resolution and its undoing, a deletion
      const seeded = ok(await req('GET', `${r.base}/pulls/${pull.number}/files`, maint.token)).body.results[0].path;
      const lined = ok(
        await req('POST', `${r.base}/pulls/${pull.number}/reviews`, maint.token, {
          status: 'commented',
          comments: [{ path: seeded, line: 1, body: 'line' }],
        }),
        201,
        'line review',
      ).body;
      w.parts.set(lined.uuid, r.uuid);
      const lineComment = ok(await req('GET', `${r.base}/pulls/${pull.number}/comments`, maint.token)).body.results[0];
      const cbase = `${r.base}/pulls/${pull.number}/comments/${lineComment.uuid}`;
      const lineReply = ok(await req('POST', `${cbase}/replies`, writer.token, { body: 'reply' }), 201, 'line reply').body;
      ok(await req('PATCH', cbase, maint.token, { body: 'line!' }), 200, 'line edit');
      ok(await req('PUT', `${cbase}/resolution`, writer.token), 200, 'resolve');
      ok(await req('DELETE', `${cbase}/resolution`, writer.token), 200, 'unresolve');
      ok(await req('DELETE', `${r.base}/pulls/${pull.number}/comments/${lineReply.uuid}`, writer.token), 204, 'line delete');
      ok(await req('POST', `${r.base}/pulls/${pull.number}/merge`, maint.token, {}), 200, 'merge');
      const timer = ok(await req('POST', `${r.base}/timers`, maint.token, { message: 'tick', run_in: '1m' }), 201, 'timer').body;
      w.timers.set(timer.uuid, { uuid: timer.uuid, kind: 'repo', ownerUuid: r.uuid });
      ok(await req('PATCH', `${r.base}/timers/${timer.uuid}`, maint.token, { message: 'tock' }));
      const gone = ok(await req('POST', `${r.base}/timers`, maint.token, { message: 'gone', run_in: '1h' }), 201).body;
      w.timers.set(gone.uuid, { uuid: gone.uuid, kind: 'repo', ownerUuid: r.uuid });
      ok(await req('DELETE', `${r.base}/timers/${gone.uuid}`, maint.token), 204);
      w.timers.get(gone.uuid)!.deleted = true;
      const hook = ok(
        await req('POST', `${r.base}/hooks`, maint.token, { url: 'https://hooks.example.com/in', events: ['pull-opened'] }),
        201,
        'hook',
      ).body;
      ok(await req('PUT', `${r.base}/hooks/${hook.uuid}`, maint.token, { active: false }));
      ok(await req('DELETE', `${r.base}/hooks/${hook.uuid}`, maint.token), 204);
      ok(await req('PUT', r.base, maint.token, { description: `about ${r.uuid}` }));
    };

    const R: Record<string, RepoM> = {};
    const T: Record<string, string> = {};

    before(async () => {
      t = await startApp(dialect, { deps: { clock, timers: { pollMs: 60_000 } } });
      const admin = ok(await req('GET', '/user', t.adminToken)).body;
      u.admin = { uuid: admin.uuid, username: admin.username, staff: true, active: true, token: t.adminToken };
      w.users.set(admin.uuid, u.admin);
      for (const name of ['own', 'mnt', 'mem', 'rdr', 'out', 'zed', 'dd']) await addUser(name);
      await addUser('stf', true);
      // teams: alpha (own; mnt, mem, rdr), beta (out), gamma (out; made inactive at the end)
      T.alpha = await addTeam(u.own!, 'alpha');
      await addMember(T.alpha, 'alpha', u.mnt!, 'maintainer');
      await addMember(T.alpha, 'alpha', u.mem!, 'member');
      await addMember(T.alpha, 'alpha', u.rdr!, 'member');
      ok(await req('PUT', '/teams/alpha/members/rdr', u.own!.token, { role: 'reader' }));
      w.teams.get(T.alpha)!.members.set(u.rdr!.uuid, 'reader');
      await addMember(T.alpha, 'alpha', u.zed!, 'reader');
      ok(await req('DELETE', '/teams/alpha/members/zed', u.own!.token), 204);
      w.teams.get(T.alpha)!.members.delete(u.zed!.uuid);
      ok(await req('PUT', '/teams/alpha', u.own!.token, { name: 'Alpha Renamed', slug: 'alpha' }));
      w.teams.get(T.alpha)!.names.add('Alpha Renamed');
      T.beta = await addTeam(u.out!, 'beta');
      T.gamma = await addTeam(u.out!, 'gamma');
      await addMember(T.gamma, 'gamma', u.mem!, 'reader');

      // repos
      R.apub = await addRepo(u.own!, 'teams/alpha', 'apub', 'public');
      R.apriv = await addRepo(u.own!, 'teams/alpha', 'apriv', 'private');
      R.aoff = await addRepo(u.own!, 'teams/alpha', 'aoff', 'public');
      R.bpriv = await addRepo(u.out!, 'teams/beta', 'bpriv', 'private');
      R.gpub = await addRepo(u.out!, 'teams/gamma', 'gpub', 'public');
      R.gpriv = await addRepo(u.out!, 'teams/gamma', 'gpriv', 'private');
      R.mpub = await addRepo(u.mem!, 'users/mem', 'mpub', 'public');
      R.mpriv = await addRepo(u.mem!, 'users/mem', 'mpriv', 'private');
      R.dpub = await addRepo(u.dd!, 'users/dd', 'dpub', 'public');
      R.doomed = await addRepo(u.own!, 'teams/alpha', 'doomed', 'public');
      R.offDoomed = await addRepo(u.own!, 'teams/alpha', 'offdoomed', 'public');

      // forks in every direction
      R.forkA = await fork(u.mem!, R.apriv!); // (a) private team repo → user, made public
      await setVisibility(u.mem!, R.forkA, 'public');
      R.forkB = await fork(u.out!, R.apub!, 'beta'); // (b) public team repo → team, made private
      await setVisibility(u.out!, R.forkB, 'private');
      R.forkC = await fork(u.mnt!, R.apriv!); // (c) private team repo → private user repo
      R.forkD = await fork(u.out!, R.dpub!); // (d) a soon-deactivated user's repo → public fork
      await setVisibility(u.out!, R.forkD, 'public');
      R.forkE = await fork(u.mnt!, R.mpub!, 'alpha'); // public user repo → team
      R.forkF = await fork(u.mem!, R.gpub!); // an inactive team's public repo → user
      await setVisibility(u.mem!, R.forkF, 'public');
      R.forkG = await fork(u.out!, R.doomed!); // its source is deleted below
      await setVisibility(u.out!, R.forkG, 'public');
      ok(await req('DELETE', R.doomed.base, u.own!.token), 204, 'delete');
      R.doomed.deleted = true;
      // an is_active=false team repo, deleted: it was for the team's maintainers only
      ok(await req('PUT', R.offDoomed.base, u.mnt!.token, { is_active: false }));
      R.offDoomed.active = false;
      ok(await req('DELETE', R.offDoomed.base, u.own!.token), 204, 'delete inactive');
      R.offDoomed.deleted = true;

      // every repo-part kind, on repos of every kind of visibility
      await repoLife(R.apub, u.mem!, u.mnt!);
      await repoLife(R.apriv, u.mem!, u.mnt!);
      await repoLife(R.aoff, u.mem!, u.mnt!);
      await repoLife(R.forkA, u.mem!, u.mem!);
      await repoLife(R.forkB, u.out!, u.out!);
      await repoLife(R.gpriv, u.out!, u.out!);
      await repoLife(R.dpub, u.dd!, u.dd!);

      // a push (branch-pushed)
      const g = await gitClient(t);
      try {
        const dir = await makeWorkTree(g, 'work', [{ 'a.txt': 'one' }]);
        await g.run([
          '-C',
          dir,
          'push',
          '-q',
          g.url(`/git${R.apriv.base.replace('/repos/', '/')}.git`, u.mem!.token),
          'main:refs/heads/pushed',
        ]);
      } finally {
        g.cleanup();
      }

      // timers of every owner kind, fired
      for (const [path, kind, owner, ownerUuid] of [
        ['/users/mem/timers', 'user', u.mem!, u.mem!.uuid],
        ['/teams/alpha/timers', 'team', u.own!, T.alpha],
        [`${R.apriv.base}/timers`, 'repo', u.mnt!, R.apriv.uuid],
      ] as const) {
        const timer = ok(await req('POST', path, owner.token, { message: `fire @mem`, run_in: '1m' }), 201, 'timer').body;
        w.timers.set(timer.uuid, { uuid: timer.uuid, kind, ownerUuid });
      }
      clock.advance(5 * 60_000);
      await t.deps.timers.runDue();
      // a team timer deleted (its deletion, like its firing, is for the team's owners)
      const teamGone = ok(await req('POST', '/teams/alpha/timers', u.own!.token, { message: 'gone', run_in: '1h' }), 201).body;
      w.timers.set(teamGone.uuid, { uuid: teamGone.uuid, kind: 'team', ownerUuid: T.alpha });
      ok(await req('DELETE', `/teams/alpha/timers/${teamGone.uuid}`, u.own!.token), 204);
      w.timers.get(teamGone.uuid)!.deleted = true;

      // a team hook whose receiver answers 410: hook-disabled (for the team's owners)
      const rx = await new Receiver().start();
      try {
        rx.respond = (_r, res) => res.writeHead(410).end();
        ok(await req('PUT', '/site-settings', t.adminToken, { webhook_allowed_hosts: ['127.0.0.1'] }));
        const hook = ok(
          await req('POST', '/teams/alpha/hooks', u.own!.token, { url: rx.url(), events: ['team-updated'] }),
          201,
        ).body;
        ok(await req('POST', `/teams/alpha/hooks/${hook.uuid}/pings`, u.own!.token), 202);
        await waitUntil(
          async () =>
            (await t.deps.db.selectFrom('hooks').select('active').where('uuid', '=', hook.uuid).executeTakeFirst())?.active === 0,
          30_000,
          'the hook disabled',
        );
      } finally {
        await rx.close();
      }

      // users, tokens, pings, settings, invites, rate limits
      ok(await req('PUT', '/users/mem', u.mem!.token, { display_name: 'Mem' }));
      ok(await req('POST', '/users/rdr/ping', u.mem!.token, { body: 'hi @rdr' }), 201);
      const tok = ok(await req('POST', '/api-tokens', u.mem!.token, { name: 'extra' }), 201).body;
      ok(await req('PUT', `/api-tokens/${tok.uuid}/revoke`, u.mem!.token));
      ok(await req('DELETE', `/api-tokens/${tok.uuid}`, u.mem!.token), 204);
      const key = ok(
        await req('POST', '/user/keys', u.mem!.token, {
          title: 'laptop',
          key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBh7rhDJbW0ISGqAV6L2jgTYvlMNt5plCDeDjuD9Ym0k mem@laptop',
        }),
        201,
      ).body;
      ok(await req('DELETE', `/user/keys/${key.uuid}`, u.mem!.token), 204);
      // a deploy key (the same key material, free again once the user key is gone)
      const deployKey = ok(
        await req('POST', `${R.apriv.base}/keys`, u.own!.token, {
          title: 'ci',
          key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBh7rhDJbW0ISGqAV6L2jgTYvlMNt5plCDeDjuD9Ym0k ci',
        }),
        201,
      ).body;
      ok(await req('DELETE', `${R.apriv.base}/keys/${deployKey.uuid}`, u.own!.token), 204);
      ok(await req('PUT', '/site-settings', t.adminToken, { signups_enabled: true, signups_require_invite: true }));
      const expires = new Date(clock.now().getTime() + 86_400_000).toISOString();
      const inv = ok(await req('POST', '/signup-invites', t.adminToken, { expires_at: expires }), 201).body;
      ok(await req('PUT', `/signup-invites/${inv.uuid}`, t.adminToken, { email: null }));
      const inv2 = ok(await req('POST', '/signup-invites', t.adminToken, { expires_at: expires }), 201).body;
      ok(await req('DELETE', `/signup-invites/${inv2.uuid}`, t.adminToken), 204);
      const signed = ok(
        await req('POST', '/signup', null, { username: 'newbie', email: 'newbie@example.com', invite_uuid: inv.uuid }),
        201,
        'signup',
      ).body;
      w.users.set(signed.user.uuid, {
        uuid: signed.user.uuid,
        username: 'newbie',
        staff: false,
        active: true,
        token: signed.token.token,
      });
      const rule = ok(
        await req('POST', '/rate-limits', t.adminToken, {
          scope: 'api:ping-user',
          max_requests: 1000,
          window_seconds: 60,
          is_enabled: true,
        }),
        201,
      ).body;
      ok(await req('PUT', `/rate-limits/${rule.uuid}`, t.adminToken, { max_requests: 999 }));
      ok(await req('DELETE', `/rate-limits/${rule.uuid}`, t.adminToken), 204);

      // last: the states that hide things
      ok(await req('PUT', R.aoff.base, u.mnt!.token, { is_active: false })); // (e)
      R.aoff.active = false;
      ok(await req('PUT', '/users/dd', t.adminToken, { is_active: false })); // (d)
      u.dd!.active = false;
      ok(await req('PUT', '/teams/gamma', t.adminToken, { name: 'Team gamma', slug: 'gamma', is_active: false }));
      w.teams.get(T.gamma)!.active = false;
    });
    after(() => t.close());

    const callers = () => ['own', 'mnt', 'mem', 'rdr', 'out', 'zed', 'stf'].map((n) => u[n]!);
    const allEvents = async () =>
      (await t.deps.db.selectFrom('events').select(['id', 'kind', 'scopes']).orderBy('id').execute()).map((e) => ({
        id: String(e.id),
        kind: e.kind,
        scopes: JSON.parse(e.scopes) as string[],
      }));
    /** Every event of a scope as `c` sees it, following `previous` to the oldest page. */
    const readScope = async (c: UserM, scope: string): Promise<{ status: number; events: EventJson[] }> => {
      let res = await req('GET', `/events?scope=${scope}&per_page=100`, c.token);
      if (res.status !== 200) return { status: res.status, events: [] };
      const events: EventJson[] = [];
      for (;;) {
        events.unshift(...(res.body.results as EventJson[]));
        if (res.body.previous === null) return { status: 200, events };
        res = ok(await t.req('GET', res.body.previous as string, { token: c.token }));
      }
    };
    // src/events/payload-schemas.ts, as the OpenAPI document's webhooks publish it
    const ajv = new Ajv.default({ allErrors: true, strict: false });
    addFormats.default(ajv);
    const validators = new Map<string, ReturnType<typeof ajv.compile>>();
    const assertPayloadDocumented = (e: EventJson, who: string) => {
      const schema = deliveredPayloadSchema(e.kind as EventKind);
      let validate = validators.get(e.kind);
      if (!validate) validators.set(e.kind, (validate = ajv.compile(schema)));
      const where = `${e.kind} ${e.id} as ${who} sees it: ${JSON.stringify(e.payload)}`;
      assert.ok(validate(e.payload), `${where}\n${ajv.errorsText(validate.errors)} (src/events/payload-schemas.ts)`);
      const known = Object.keys(schema.properties as object);
      const undocumented = Object.keys(e.payload as object).filter((k) => !known.includes(k));
      assert.deepEqual(undocumented, [], `${where}: fields missing from src/events/payload-schemas.ts`);
    };
    const assertNoLeak = (c: UserM, e: EventJson, where: string) => {
      const leaks = w.leaks(c, e);
      assert.deepEqual(leaks, [], `${c.username} via ${where}: ${e.kind} ${e.id} ${JSON.stringify(e)}`);
    };

    it('produces at least one event of every declared kind, and only declared kinds', async () => {
      const kinds = new Set((await allEvents()).map((e) => e.kind));
      assert.deepEqual([...kinds].sort(), Object.keys(EVENT_KINDS).sort());
    });

    it('every caller × every scope: GET /events shows nothing the caller may not read', async () => {
      const scopes = [...new Set((await allEvents()).flatMap((e) => e.scopes))];
      assert.ok(scopes.length > 60, `${scopes.length} scopes`);
      let shown = 0;
      for (const c of callers()) {
        for (const scope of scopes) {
          const res = await readScope(c, scope);
          assert.equal(res.status, w.scopeReadable(c, scope) ? 200 : 404, `${c.username} ${scope}`);
          for (const e of res.events) {
            assertNoLeak(c, e, scope);
            shown++;
          }
        }
      }
      assert.ok(shown > 1000, `${shown} events shown`);
      for (const scope of scopes.slice(0, 20)) ok(await req('GET', `/events?scope=${scope}`, null), 401);
    });

    it('every caller × every event: GET /events/{id} shows nothing the caller may not read; its payload is as the OpenAPI webhooks say', async () => {
      const events = await allEvents();
      for (const c of callers()) {
        let seen = 0;
        for (const e of events) {
          const res = await req('GET', `/events/${e.id}`, c.token);
          if (res.status === 404) continue;
          ok(res, 200);
          assertNoLeak(c, res.body, `/events/${e.id}`);
          assertPayloadDocumented(res.body as EventJson, c.username);
          seen++;
        }
        // a user timer and a user's inbox updates are that user's alone: staff see every event but
        // other users' timers' events and notification-updated events
        const othersTimers = events.filter(
          (e) =>
            (e.kind.startsWith('timer-') || e.kind === 'notification-updated') &&
            e.scopes.some((s) => s.startsWith('user:') && s !== `user:${c.uuid}`),
        );
        if (c.staff) {
          assert.ok(othersTimers.length > 0);
          assert.equal(seen, events.length - othersTimers.length, "staff see every event but other users' timers'");
        } else assert.ok(seen > 0 && seen < events.length, `${c.username} sees some events (${seen})`);
      }
    });

    it('every caller × every feed: the activity feeds show nothing the caller may not read', async () => {
      for (const c of callers()) {
        for (const slug of ['alpha', 'beta', 'gamma']) {
          const res = await req('GET', `/teams/${slug}/activity?per_page=100`, c.token);
          if (res.status === 404) continue;
          for (const e of ok(res).body.results as EventJson[]) assertNoLeak(c, e, `team ${slug}`);
        }
        for (const name of ['own', 'mnt', 'mem', 'rdr', 'out', 'zed', 'dd', 'stf']) {
          for (let page = 1; page < 10; page++) {
            const res = await req('GET', `/users/${name}/activity?per_page=100&page=${page}`, c.token);
            if (res.status === 404) break;
            for (const e of ok(res).body.results as EventJson[]) assertNoLeak(c, e, `user ${name}`);
            if (res.body.next === null) break;
          }
        }
      }
    });

    it('the repo record names its fork source only to callers who may read it', async () => {
      for (const c of callers()) {
        for (const r of Object.values(R)) {
          if (r.deleted) continue;
          const res = await req('GET', r.base, c.token);
          if (res.status !== 200) continue;
          const source = res.body.fork_of_uuid as string | null;
          if (source !== null) assert.ok(w.repoReadable(c, source), `${c.username} reads ${r.base}: fork_of_uuid`);
        }
        for (const ns of ['teams/alpha', 'teams/beta', 'users/mem', 'users/out', 'users/mnt']) {
          const res = await req('GET', `/${ns}/repos?per_page=100`, c.token);
          if (res.status !== 200) continue;
          for (const repo of res.body.results as { fork_of_uuid: string | null }[]) {
            if (repo.fork_of_uuid !== null) assert.ok(w.repoReadable(c, repo.fork_of_uuid), `${c.username} lists ${ns}`);
          }
        }
      }
      // the fork's readers who may read the source still see it
      assert.equal(ok(await req('GET', R.forkA!.base, u.mem!.token)).body.fork_of_uuid, R.apriv!.uuid);
      assert.equal(ok(await req('GET', R.forkA!.base, u.zed!.token)).body.fork_of_uuid, null);
    });

    const inScope = async (c: UserM, scope: string, kind?: string) =>
      (await readScope(c, scope)).events.filter((e) => kind === undefined || e.kind === kind);

    it("(a) a public fork's scope does not name its private source", async () => {
      const [created] = await inScope(u.zed!, `repo:${R.forkA!.uuid}`, 'fork-created');
      assert.equal(created!.payload.repo_uuid, R.forkA!.uuid);
      assert.equal(created!.payload.source_repo_uuid, null);
      assert.equal(created!.payload.source_full_name, null);
      assert.ok(!created!.scopes.includes(`repo:${R.apriv!.uuid}`));
      const [repoCreated] = await inScope(u.zed!, `repo:${R.forkA!.uuid}`, 'repo-created');
      assert.equal(repoCreated!.payload.fork_of_uuid, null);
      // a reader of the source still sees it all
      const [full] = await inScope(u.rdr!, `repo:${R.forkA!.uuid}`, 'fork-created');
      assert.equal(full!.payload.source_full_name, 'alpha/apriv');
      // and the live stream applies the same rule
      const sse = await openSse(
        await listen(t),
        `/api/v1/tail-events?scope=repo:${R.forkA!.uuid}&kind=fork-created&last_event_id=0`,
        u.zed!.token,
      );
      try {
        await sse.waitFor((f) => eventFrames(f).length >= 1);
        const live = JSON.parse(eventFrames(sse.frames)[0]!.data) as EventJson;
        assert.equal(live.payload.source_full_name, null);
        assert.equal(live.payload.source_repo_uuid, null);
      } finally {
        sse.close();
      }
    });

    it("(b) a private fork is not named through its public source's scope nor the forker's activity", async () => {
      for (const c of [u.zed!, u.rdr!, u.mem!]) {
        const events = await inScope(c, `repo:${R.apub!.uuid}`, 'fork-created');
        assert.ok(!events.some((e) => e.payload.repo_uuid === R.forkB!.uuid), c.username);
        const activity = ok(await req('GET', '/users/out/activity?per_page=100', c.token)).body.results as EventJson[];
        assert.ok(!activity.some((e) => JSON.stringify(e).includes(R.forkB!.uuid)), c.username);
      }
      const own = await inScope(u.out!, `repo:${R.apub!.uuid}`, 'fork-created');
      assert.ok(
        own.some((e) => e.payload.full_name === 'beta/apub'),
        'the fork owner still sees it',
      );
    });

    it('(c) a private user fork of a private team repo is not named to the team', async () => {
      for (const c of [u.rdr!, u.mem!, u.own!]) {
        const events = await inScope(c, `repo:${R.apriv!.uuid}`);
        assert.ok(!events.some((e) => JSON.stringify(e).includes(R.forkC!.uuid)), c.username);
        const activity = ok(await req('GET', '/teams/alpha/activity?per_page=100', c.token)).body.results as EventJson[];
        assert.ok(!activity.some((e) => JSON.stringify(e).includes(R.forkC!.uuid)), c.username);
      }
      assert.ok(
        (await inScope(u.mnt!, `repo:${R.apriv!.uuid}`, 'fork-created')).some((e) => e.payload.repo_uuid === R.forkC!.uuid),
      );
    });

    it("(d) a deactivated user's repo is not named through public forks of it", async () => {
      for (const c of [u.zed!, u.out!]) {
        for (const e of await inScope(c, `repo:${R.forkD!.uuid}`)) {
          assert.ok(!JSON.stringify(e).includes(R.dpub!.uuid), `${c.username}: ${JSON.stringify(e)}`);
          assert.ok(!Object.values(e.payload).includes('dd/dpub'), c.username);
        }
      }
      const [created] = await inScope(u.stf!, `repo:${R.forkD!.uuid}`, 'fork-created');
      assert.equal(created!.payload.source_full_name, 'dd/dpub', 'staff see it');
    });

    it('(e) team readers do not see events of an is_active=false repo through the team scope', async () => {
      for (const c of [u.rdr!, u.mem!]) {
        const events = await inScope(c, `team:${T.alpha}`);
        assert.ok(events.length > 0);
        assert.ok(!events.some((e) => JSON.stringify(e).includes(R.aoff!.uuid)), c.username);
        const activity = ok(await req('GET', '/teams/alpha/activity?per_page=100', c.token)).body.results as EventJson[];
        assert.ok(!activity.some((e) => JSON.stringify(e).includes(R.aoff!.uuid)), c.username);
      }
      const maint = await inScope(u.mnt!, `team:${T.alpha}`, 'repo-updated');
      assert.ok(
        maint.some(
          (e) =>
            e.payload.repo_uuid === R.aoff!.uuid &&
            String(e.payload.changes && (e.payload.changes as { description?: string }).description).startsWith('about'),
        ),
      );
    });

    it("(f) a deleted is_active=false team repo's repo-deleted is hidden from members below maintain", async () => {
      const deletedOf = (events: EventJson[], r: RepoM) =>
        events.filter((e) => e.kind === 'repo-deleted' && e.payload.repo_uuid === r.uuid);
      for (const c of [u.rdr!, u.mem!]) {
        const events = await inScope(c, `team:${T.alpha}`);
        assert.ok(!events.some((e) => JSON.stringify(e).includes(R.offDoomed!.uuid)), c.username);
        assert.ok(!events.some((e) => JSON.stringify(e).includes('alpha/offdoomed')), c.username);
        const activity = ok(await req('GET', '/teams/alpha/activity?per_page=100', c.token)).body.results as EventJson[];
        assert.equal(deletedOf(activity, R.offDoomed!).length, 0, c.username);
        // the deletion of an active repo they could read is still theirs
        const [doomed] = deletedOf(events, R.doomed!);
        assert.equal(doomed!.payload.full_name, 'alpha/doomed', c.username);
        assert.equal(doomed!.payload.is_active, true);
      }
      const id = (await allEvents()).find((e) => e.kind === 'repo-deleted' && e.scopes.includes(`repo:${R.offDoomed!.uuid}`))!.id;
      ok(await req('GET', `/events/${id}`, u.mem!.token), 404, 'by id');
      for (const c of [u.mnt!, u.own!, u.stf!]) {
        const [deleted] = deletedOf(await inScope(c, `team:${T.alpha}`), R.offDoomed!);
        assert.equal(deleted!.payload.full_name, 'alpha/offdoomed', c.username);
        assert.equal(deleted!.payload.is_active, false);
        ok(await req('GET', `/events/${id}`, c.token), 200, c.username);
      }
    });

    it("(g) a team timer's firing and deletion reach only those who may read the timer: the team's owners", async () => {
      const teamTimers = [...w.timers.values()].filter((tm) => tm.kind === 'team').map((tm) => tm.uuid);
      assert.equal(teamTimers.length, 2);
      const timerEvents = (events: EventJson[]) =>
        events.filter((e) => e.kind.startsWith('timer-') && teamTimers.includes(e.payload.timer_uuid as string));
      for (const c of [u.mnt!, u.mem!, u.rdr!]) {
        assert.deepEqual(timerEvents(await inScope(c, `team:${T.alpha}`)), [], c.username);
        const activity = ok(await req('GET', '/teams/alpha/activity?per_page=100', c.token)).body.results as EventJson[];
        assert.deepEqual(timerEvents(activity), [], c.username);
        for (const tm of teamTimers) ok(await req('GET', `/teams/alpha/timers/${tm}`, c.token), 403, 'the timer itself');
      }
      for (const e of (await allEvents()).filter((e) => e.kind === 'timer-fired' || e.kind === 'timer-deleted')) {
        if (!e.scopes.includes(`team:${T.alpha}`)) continue;
        ok(await req('GET', `/events/${e.id}`, u.mem!.token), 404, `${e.kind} by id`);
        ok(await req('GET', `/events/${e.id}`, u.own!.token), 200, `${e.kind} by id`);
      }
      for (const c of [u.own!, u.stf!]) {
        const kinds = timerEvents(await inScope(c, `team:${T.alpha}`)).map((e) => e.kind);
        for (const kind of ['timer-created', 'timer-fired', 'timer-deleted'])
          assert.ok(kinds.includes(kind), `${c.username} ${kind}`);
      }
    });

    it("(h) a detached fork's source, once deleted, is named to staff only, as GET of the fork names it to nobody", async () => {
      const detached = (events: EventJson[]) =>
        events.filter((e) => e.kind === 'repo-updated' && e.payload.action === 'fork_source_deleted');
      // the fork's owner and an outsider who could read the (public) source while it existed
      for (const c of [u.out!, u.zed!]) {
        const [e] = detached(await inScope(c, `repo:${R.forkG!.uuid}`));
        assert.equal(e!.payload.source_repo_uuid, null, c.username);
        assert.deepEqual(e!.payload.changes, { fork_of_uuid: null });
        assert.equal(ok(await req('GET', R.forkG!.base, c.token)).body.fork_of_uuid, null, c.username);
      }
      const [staffView] = detached(await inScope(u.stf!, `repo:${R.forkG!.uuid}`));
      assert.equal(staffView!.payload.source_repo_uuid, R.doomed!.uuid, 'staff see the event as stored');
      assert.equal(ok(await req('GET', R.forkG!.base, u.stf!.token)).body.fork_of_uuid, null);
    });

    it('refuses to record an event of an undeclared kind, or whose subject is not one of its scopes (so a feed may skip events on their scopes)', async () => {
      const before = (await allEvents()).length;
      const write = (kind: string, scopes: string[], payload: Record<string, unknown>) =>
        inTransaction(t.deps, (tx) => tx.emit({ kind: kind as EventKind, scopes, actor: null, payload }));
      await assert.rejects(write('no-such-kind', [`repo:${R.apub!.uuid}`], { repo_uuid: R.apub!.uuid }), /no entry/);
      await assert.rejects(
        write('pull-opened', [`repo:${R.apub!.uuid}`], { repo_uuid: R.apriv!.uuid }),
        /subject repo:\S+ is not one of its scopes/,
      );
      await assert.rejects(write('team-updated', [`user:${u.mem!.uuid}`], { team_uuid: T.alpha }), /not one of its scopes/);
      assert.equal((await allEvents()).length, before, 'nothing written');
    });
  });
}
