/**
 * Every access decision the access module makes passes through `noteDecision`: a repo resolved
 * for a viewer (the read path's one statement), a batch `checkAccess`, a level computed inside a
 * write, a team role (an event scope is checked through `checkAccess`). Nothing listens in production (an empty set costs a
 * size check); test/read-path.test.ts counts them per request, as it counts statements, so a page
 * that decides access twice is caught (docs/architecture.md "The read path").
 */
export type DecisionKind = 'repo' | 'check' | 'level' | 'team-role';
export type DecisionObserver = (kind: DecisionKind) => void;

export const decisionObservers = new Set<DecisionObserver>();

export function noteDecision(kind: DecisionKind): void {
  if (decisionObservers.size === 0) return;
  for (const observe of decisionObservers) observe(kind);
}
