// Command-line flags of the bench scripts: `--name value` pairs taken out of argv.

/** The arguments after the script, with `flag` taking `--name value` out of them. */
export function parseArgs() {
  const args = process.argv.slice(2);
  /** @param {string} name @param {string} fallback */
  const flag = (name, fallback) => {
    const i = args.indexOf(name);
    if (i < 0) return fallback;
    const value = args[i + 1];
    args.splice(i, 2);
    return value;
  };
  /** @param {string} name */
  const present = (name) => {
    const i = args.indexOf(name);
    if (i >= 0) args.splice(i, 1);
    return i >= 0;
  };
  return { args, flag, present };
}
