/**
 * Requiring a second factor (docs/signin.md "Requiring it"), decided here for every surface: the
 * API's auth hook and the pages (site-wide), a team's repos and pages, git over HTTP and SSH (a
 * team's requirement). A caller without one is refused with 403 `two_factor_required` and told
 * how to enrol; API tokens are no way around it (the token's user needs the factor).
 */
import { AppError } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

export const TWO_FACTOR_REQUIRED = 'two_factor_required';

/** Where a person enrols (the pages' Security settings), named in every refusal. */
export const ENROL_PATH = '/settings/security';

/** Whether the caller counts as having a second factor (an internal caller with no flag does). */
export function hasTwoFactor(viewer: Viewer | null): boolean {
  return viewer?.twoFactor !== false;
}

const enrolHint = `Set up an authenticator app in Settings, Security (${ENROL_PATH}; API: POST /api/v1/user/two-factor/totp), then sign in again.`;

/** The site-wide requirement: a signed-in caller without a second factor, or null. */
export function siteTwoFactorRefusal(viewer: Viewer | null): AppError | null {
  if (!viewer || viewer.siteRequiresTwoFactor !== true || hasTwoFactor(viewer)) return null;
  return new AppError(403, TWO_FACTOR_REQUIRED, `This site requires a second factor. ${enrolHint}`);
}

/** A team's requirement: a member (`role` not null) without a second factor, or null. */
export function teamTwoFactorRefusal(
  viewer: Viewer | null,
  team: { slug: string; require_two_factor: number | string },
  role: string | null,
): AppError | null {
  if (!viewer || role === null || Number(team.require_two_factor) !== 1 || hasTwoFactor(viewer)) return null;
  return new AppError(403, TWO_FACTOR_REQUIRED, `The team ${team.slug} requires a second factor. ${enrolHint}`);
}

/** Turning a requirement on: only someone who has a second factor may require one of others. */
export function assertMayRequireTwoFactor(viewer: Viewer, enabling: boolean): void {
  if (enabling && !hasTwoFactor(viewer)) {
    throw new AppError(403, TWO_FACTOR_REQUIRED, `Set up a second factor yourself before requiring one. ${enrolHint}`);
  }
}
