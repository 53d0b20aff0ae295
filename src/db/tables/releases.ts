/** Releases (migration 461): one per repo and tag, and their assets (bytes in the blob store). */

export interface ReleasesTable {
  uuid: string;
  repo_uuid: string;
  tag_name: string;
  target_commitish: string;
  name: string;
  body: string;
  draft: number;
  prerelease: number;
  author_uuid: string;
  created_at: string;
  published_at: string | null;
}

export interface ReleaseAssetsTable {
  uuid: string;
  release_uuid: string;
  repo_uuid: string;
  name: string;
  size: number;
  content_type: string;
  sha256: string;
  download_count: number;
  uploader_uuid: string;
  created_at: string;
}

export interface ReleasesTables {
  releases: ReleasesTable;
  release_assets: ReleaseAssetsTable;
}
