// Code generated from configschema/schema.go by `go test ./configschema -args -update`. DO NOT EDIT.

/**
 * SERVER_KEYS are the `soba.*` settings that belong to the server, as dotted
 * paths below `soba`, in the order of the server's configuration schema.
 * Client-only keys (serverPath, serverArgs, trace.server) are not here: the
 * server rejects unknown keys (R-S1).
 */
export const SERVER_KEYS = [
  'model.provider',
  'model.baseURL',
  'model.name',
  'model.apiKeyEnv',
  'model.contextWindow',
  'model.maxOutputTokens',
  'model.nativeContinuation',
  'summaryModel',
  'models',
  'compaction',
  'tools.approval',
  'tools.autoApprovePaths',
  'tools.maxResultTokens',
  'mcpServers',
  'sessionDir',
  'sessionOnStart',
] as const;

/**
 * REPOSITORY_KEYS are the SERVER_KEYS a repository may not simply set (SPEC
 * R-W5): their workspace and folder values go to the server as
 * repositorySettings, which it holds to the repository's rules until the
 * workspace is trusted. They are package.json's restrictedConfigurations too.
 */
export const REPOSITORY_KEYS = [
  'model.provider',
  'model.baseURL',
  'model.name',
  'model.apiKeyEnv',
  'model.contextWindow',
  'model.maxOutputTokens',
  'model.nativeContinuation',
  'summaryModel',
  'models',
  'tools.approval',
  'tools.autoApprovePaths',
  'mcpServers',
] as const;
