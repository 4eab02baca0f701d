// The part of B4.run's `@b4run/cli` that examples/b4run-config/b4.config.ts uses, declared
// with the seed's own contract (B4.run is not on the registry): the example must type-check
// with b4boxSandbox() where B4.run expects a SandboxProvider.
import type { SandboxPolicy, SandboxProvider } from "../../src/sandbox-types.js";

export interface SandboxConfig {
  readonly provider: SandboxProvider;
  readonly network?: SandboxPolicy["network"];
  readonly env?: Record<string, string>;
  readonly resources?: SandboxPolicy["resources"];
  readonly idleTimeoutMs?: number;
}

export declare function config(c: { readonly sandbox?: SandboxConfig }): unknown;
