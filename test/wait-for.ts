/** Wait for a condition with a deadline, never a fixed sleep (STYLE.md rule 11). */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, pollMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
