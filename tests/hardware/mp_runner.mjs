// Run the portable firmware tests under MicroPython (WebAssembly port) on Node.js.
//
// usage: node mp_runner.mjs <micropython.mjs> <firmware dir> <portable tests dir> <vectors.json>
//
// Copies the firmware package (tssbfw) to /fw, the portable tests and the protocol
// vectors to /portable in MicroPython's in-memory file system, calls every test_*
// function of every test_*.py module and prints one line:
//   MPRESULTS [[module, function, "pass"|"fail"|"error", detail], ...]
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [mpModule, fwDir, portableDir, vectorsPath] = process.argv.slice(2);
const { loadMicroPython } = await import(pathToFileURL(mpModule).href);

const lines = [];
const mp = await loadMicroPython({
  heapsize: 16 * 1024 * 1024,
  stdout: (line) => lines.push(line),
  stderr: (line) => process.stderr.write(line + "\n"),
});

function copyPy(srcDir, dstDir) {
  mp.FS.mkdirTree(dstDir);
  for (const name of readdirSync(srcDir)) {
    if (name.endsWith(".py")) {
      mp.FS.writeFile(join(dstDir, name), readFileSync(join(srcDir, name)));
    }
  }
}

copyPy(join(fwDir, "tssbfw"), "/fw/tssbfw");
copyPy(portableDir, "/portable");
mp.FS.writeFile("/portable/protocol-vectors.json", readFileSync(vectorsPath));

const modules = readdirSync(portableDir)
  .filter((n) => n.startsWith("test_") && n.endsWith(".py"))
  .map((n) => n.slice(0, -3))
  .sort();

mp.runPython(`
import io, json, sys
sys.path.insert(0, "/fw")
sys.path.insert(0, "/portable")
results = [["<runtime>", sys.implementation.name + " " + ".".join(
    str(v) for v in sys.implementation.version[:3]), "info", ""]]
for modname in ${JSON.stringify(modules)}:
    try:
        mod = __import__(modname)
    except Exception as exc:
        buf = io.StringIO()
        sys.print_exception(exc, buf)
        results.append([modname, "<import>", "error", buf.getvalue()])
        continue
    for name in sorted(dir(mod)):
        if not name.startswith("test_"):
            continue
        try:
            getattr(mod, name)()
            results.append([modname, name, "pass", ""])
        except Exception as exc:
            buf = io.StringIO()
            sys.print_exception(exc, buf)
            results.append([modname, name, "fail", buf.getvalue()])
print("MPRESULTS " + json.dumps(results))
`);

const out = lines.find((l) => l.startsWith("MPRESULTS "));
if (!out) {
  process.stderr.write("no results from MicroPython\n" + lines.join("\n") + "\n");
  process.exit(2);
}
process.stdout.write(out + "\n");
