import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type RepoRow,
  type TeamRole,
  readRepo,
  repoAccessLevel,
  repoLevelFrom,
  repoLevelOf,
  repoReadableBy,
  repoUuidReadable,
} from '../src/access/index.ts';
import { LEVEL_BY_RANK } from '../src/access/repo-level.ts';
import type { Viewer } from '../src/viewer.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, startApp } from './helpers.ts';

/**
 * The rule of repo access is written once in SQL (`repoLevelSql`) and once in TypeScript
 * (`repoLevelFrom`): every combination of viewer (staff, the owner user, each team role, no role,
 * a deactivated user; each in an active and an inactive team), owner (team or user, active or
 * deactivated), visibility and repo activity must get the same level from both, and from every
 * reader built on them (the hot read, the uuid check, the list filter, `repoAccessLevel`).
 */
for (const dialect of DIALECTS) {
  describe(`one rule of repo access (${dialect})`, () => {
    test('repoLevelSql and repoLevelFrom agree over every combination', async () => {
      const t = await startApp(dialect);
      try {
        const db = t.deps.db;
        const staff = await t.user('staffer', { staff: true });
        const owner = await t.user('owner');
        const gone = await t.user('gone'); // a deactivated user: owns repos and is a team member
        const outsider = await t.user('outsider');
        const roles: TeamRole[] = ['owner', 'maintainer', 'member', 'reader'];
        const byRole = new Map<TeamRole, { uuid: string; username: string; token: string }>();
        for (const role of roles) byRole.set(role, await t.user(`r-${role}`));
        const members = [
          ...roles.map((role) => ({ uuid: byRole.get(role)!.uuid, role })),
          { uuid: gone.uuid, role: 'member' as const },
        ];
        const active = await seedTeam(t, 'live', members);
        const inactive = await seedTeam(t, 'dormant', members, { is_active: false });
        await db.updateTable('users').set({ is_active: 0 }).where('uuid', '=', gone.uuid).execute();

        const owners = [
          { kind: 'team' as const, uuid: active.uuid, name: 'live' },
          { kind: 'team' as const, uuid: inactive.uuid, name: 'dormant' },
          { kind: 'user' as const, uuid: owner.uuid, name: 'owner' },
          { kind: 'user' as const, uuid: gone.uuid, name: 'gone' },
        ];
        const repos: Array<{ row: RepoRow; ownerName: string }> = [];
        for (const o of owners)
          for (const visibility of ['public', 'private'] as const)
            for (const isActive of [1, 0] as const) {
              const slug = `${visibility}-${isActive ? 'on' : 'off'}`;
              const { uuid } = await seedRepo(t, { kind: o.kind, uuid: o.uuid }, slug, { visibility });
              await db.updateTable('repos').set({ is_active: isActive }).where('uuid', '=', uuid).execute();
              repos.push({
                row: await db.selectFrom('repos').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow(),
                ownerName: o.name,
              });
            }

        const asViewer = (u: { uuid: string; username: string }, isStaff = false): Viewer => ({
          uuid: u.uuid,
          username: u.username,
          isStaff,
          tokenUuid: '',
        });
        const viewers: Viewer[] = [
          asViewer(staff, true),
          asViewer(owner),
          asViewer(gone),
          asViewer(outsider),
          ...roles.map((r) => asViewer(byRole.get(r)!)),
        ];
        const userActive = new Map<string, boolean>([
          [owner.uuid, true],
          [gone.uuid, false],
        ]);

        // gone cannot sign in any more; everyone else calls the API too
        const tokens = new Map<string, string>([staff, owner, outsider, ...byRole.values()].map((u) => [u.uuid, u.token]));
        let compared = 0;
        for (const viewer of viewers) {
          const readable = new Set(
            (await db.selectFrom('repos').select('uuid').where(repoReadableBy(viewer)).execute()).map((r) => r.uuid),
          );
          for (const { row: repo, ownerName } of repos) {
            const member = await db
              .selectFrom('team_members')
              .select('role')
              .where('team_uuid', '=', repo.owner_uuid)
              .where('user_uuid', '=', viewer.uuid)
              .executeTakeFirst();
            const role = repo.owner_kind === 'team' ? ((member?.role as TeamRole | undefined) ?? null) : null;
            const expected = repoLevelFrom(
              viewer,
              repo,
              role,
              repo.owner_kind === 'user' ? userActive.get(repo.owner_uuid)! : true,
            );
            const what = `${viewer.username} on ${repo.owner_kind}:${ownerName}/${repo.slug}`;

            const sqlRow = await db
              .selectFrom('repos')
              .select(repoLevelOf(viewer).as('level'))
              .where('uuid', '=', repo.uuid)
              .executeTakeFirstOrThrow();
            assert.equal(LEVEL_BY_RANK[Number(sqlRow.level)], expected, `repoLevelSql: ${what}`);
            assert.equal(await repoAccessLevel(db, viewer, repo), expected, `repoAccessLevel: ${what}`);
            const canRead = expected !== 'none';
            assert.equal(readable.has(repo.uuid), canRead, `repoReadableBy: ${what}`);
            assert.equal(await repoUuidReadable(db, viewer, repo.uuid), canRead, `repoUuidReadable: ${what}`);

            // the hot read (one compiled statement); a deactivated user owner is 404 to non-staff before any level
            const ref = { ownerKind: repo.owner_kind as 'team' | 'user', ownerName, repoSlug: repo.slug };
            const hot = await readRepo(t.deps.database, viewer, ref).then(
              (r) => r.level,
              () => 'none' as const,
            );
            const ownerHidden = repo.owner_kind === 'user' && !userActive.get(repo.owner_uuid) && !viewer.isStaff;
            assert.equal(hot, ownerHidden ? 'none' : expected, `readRepo: ${what}`);
            // and through HTTP, where the token lookup makes the same read in its own statement
            const token = tokens.get(viewer.uuid);
            if (token) {
              const res = await t.req(
                'GET',
                `/api/v1/${ref.ownerKind === 'team' ? 'teams' : 'users'}/${ownerName}/repos/${repo.slug}`,
                {
                  token,
                },
              );
              assert.equal(res.status, hot === 'none' ? 404 : 200, `GET {repo}: ${what}`);
            }
            compared++;
          }
        }
        assert.equal(compared, viewers.length * repos.length);
      } finally {
        await t.close();
      }
    });
  });
}
