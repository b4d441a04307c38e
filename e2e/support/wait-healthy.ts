/**
 * Polls `GET /healthz` until it answers 200. `exitedWith` says why a child
 * process that died will never answer; `output` goes in the timeout's error.
 */
export async function waitUntilHealthy(
  baseUrl: string,
  options: { timeoutMs?: number; exitedWith?: () => string | undefined; output: () => string },
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const exited = options.exitedWith?.();
    if (exited !== undefined) throw new Error(`server exited: ${exited}`);
    const status = await fetch(`${baseUrl}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no healthy answer from ${baseUrl} within ${timeoutMs / 1000} s; it printed: ${options.output()}`);
}
