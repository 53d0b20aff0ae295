/** Who is making a request: the authenticated user and the token they used. */
export interface Viewer {
  uuid: string;
  username: string;
  isStaff: boolean;
  tokenUuid: string;
}
