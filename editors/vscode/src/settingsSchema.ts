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
  'compaction',
  'tools.approval',
  'mcpServers',
  'sessionDir',
  'sessionOnStart',
] as const;
