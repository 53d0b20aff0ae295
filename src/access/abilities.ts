import type { PullContext, RepoContext, RepoLevel, Viewer } from '../viewer.ts';
import { isAnonymous } from './anonymous.ts';
import { levelAtLeast } from './levels.ts';

/**
 * The level each action under a repo needs: the services' `command()` needs name these, and the
 * pages' abilities below are computed from them, so a page offers an action exactly when its
 * route would take it (Outline's abilities; docs/architecture.md "The read path").
 */
export const NEEDS = {
  /** change the repo's settings, protections, hooks, timers */
  manage: 'maintain',
  /** delete the repo */
  delete: 'owner',
  /** push, merge, label and assign */
  write: 'write',
  /** open a pull or thread, review, reply, attach */
  take_part: 'read',
} as const satisfies Record<string, RepoLevel>;

/** What a viewer may do on a repo's pages, decided once from the request's `RepoContext`. */
export interface RepoAbilities {
  level: RepoLevel;
  /** the Settings tab and its pages */
  manage: boolean;
  delete: boolean;
  /** push, merge, labels, assignees (false on an archived repo) */
  write: boolean;
  /** open pulls and threads, reply, review, attach (false on an archived repo) */
  takePart: boolean;
}

/** A signed-out reader (anonymous.ts) reads what its level lets it and takes no action. */
export function repoAbilities(at: Pick<RepoContext, 'level' | 'repo'>, viewer?: Pick<Viewer, 'uuid'>): RepoAbilities {
  const acts = !(viewer && isAnonymous(viewer));
  const live = acts && at.repo.is_archived !== 1;
  return {
    level: at.level,
    manage: acts && levelAtLeast(at.level, NEEDS.manage),
    delete: acts && levelAtLeast(at.level, NEEDS.delete),
    write: live && levelAtLeast(at.level, NEEDS.write),
    takePart: live && levelAtLeast(at.level, NEEDS.take_part),
  };
}

/** What a viewer may do on one pull's page. */
export interface PullAbilities extends RepoAbilities {
  merge: boolean;
  /** turn auto-merge on or off (PUT/DELETE {repo}/pulls/{n}/auto-merge): write access, an open pull that is not a draft */
  autoMerge: boolean;
  /** the review form; `verdicts` are the statuses it offers (the author may only comment) */
  review: boolean;
  verdicts: Array<'approved' | 'changes_requested' | 'commented'>;
  /** attach files (a merged pull is read-only) */
  attach: boolean;
  /** change the title, body, open or closed: the author or a maintainer */
  edit: boolean;
  /** request and withdraw reviews (the requested-reviewers routes): the author or write access */
  requestReviews: boolean;
  /** mark ready for review or convert to draft (`draft` of PUT {repo}/pulls/{n}): the author or write access */
  setDraft: boolean;
}

export function pullAbilities(viewer: Viewer, at: Pick<PullContext, 'level' | 'repo' | 'pull'>): PullAbilities {
  const repo = repoAbilities(at, viewer);
  const { pull } = at;
  const isAuthor = pull.author_uuid === viewer.uuid;
  const notMerged = pull.status !== 'merged';
  return {
    ...repo,
    merge: repo.write && pull.status === 'open',
    autoMerge: repo.write && pull.status === 'open' && pull.draft !== 1,
    review: repo.takePart && notMerged,
    verdicts: isAuthor ? ['commented'] : ['approved', 'changes_requested', 'commented'],
    attach: repo.takePart && notMerged,
    edit: repo.takePart && notMerged && (isAuthor || levelAtLeast(at.level, NEEDS.manage)),
    requestReviews: repo.takePart && notMerged && (isAuthor || repo.write),
    setDraft: repo.takePart && notMerged && (isAuthor || repo.write),
  };
}
