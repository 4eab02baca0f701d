// A B4.run app whose workspace tools (readFile, writeFile, editFile, listDir, runBash) run in
// b4box: the provider is the one line that changes. B4BOX_URL is the server
// (http://host:4100 or unix:/run/b4box/b4box.sock), B4BOX_TOKEN a threadAccess token.
import { config } from "@b4run/cli"
import { b4boxSandbox } from "@b4box/client"

export default config({
  sandbox: {
    provider: b4boxSandbox({ url: process.env.B4BOX_URL ?? "http://127.0.0.1:4100", token: process.env.B4BOX_TOKEN }),
    network: { mode: "deny" }, // b4box applies its own b4box.json; acquire refuses a thread it would give a network
    idleTimeoutMs: 600_000,
  },
})
