// ESLint, flat config: typescript-eslint's type-aware recommended rules over every TypeScript
// file tsconfig.json compiles. Formatting is Prettier's job (eslint-config-prettier turns off the
// stylistic rules that would fight it).
import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", ".build-*/", "gen/", "node_modules/", "test-artifacts/", ".bench/", "src/console/static/"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // A leading underscore marks a parameter an interface requires but this body does not use,
      // and a key dropped by rest destructuring ({ dropped: _, ...kept }).
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", ignoreRestSiblings: true }],
      // `let x; … x = make(() => x?.stop())`: callbacks made before the one assignment read it.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      // node:test runs what test() and describe() register; the promise they return is not ours to await.
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          allowForKnownSafeCalls: [
            { from: "package", package: "node:test", name: ["test", "it", "describe", "suite", "before", "after", "beforeEach", "afterEach"] },
          ],
        },
      ],
    },
  },
  {
    files: ["src/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "(^|/)test/", message: "Production code never imports test code." }] }],
    },
  },
  {
    // The deterministic core (docs/architecture.md): no clocks, randomness, sockets or files. Time, entropy,
    // storage and the network come in through ports, so the simulator can run the same code.
    files: ["src/store/**/*.ts", "src/election/**/*.ts", "src/consensus/**/*.ts", "src/replica/**/*.ts"],
    ignores: ["src/store/disk/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { regex: "^(?!\\.)", message: "The deterministic core imports only project modules; I/O comes in through ports." },
            { regex: "(^|/)(server|cli|client|console|recipes|disk)(/|$)", message: "The core must not reach into I/O layers; take a port." },
            { regex: "(^|/)test/", message: "Production code never imports test code." },
          ],
        },
      ],
      "no-restricted-globals": [
        "error",
        ...["setTimeout", "setInterval", "setImmediate", "clearTimeout", "clearInterval", "clearImmediate", "performance", "process", "crypto", "fetch"].map(
          (name) => ({ name, message: "The deterministic core takes time, entropy and I/O through ports." }),
        ),
      ],
      "no-restricted-properties": [
        "error",
        { object: "Date", property: "now", message: "Clocks come through the core's ports." },
        { object: "Math", property: "random", message: "Entropy comes through the core's ports." },
      ],
      "no-restricted-syntax": [
        "error",
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "Clocks come through the core's ports." },
      ],
    },
  },
  {
    files: ["**/*.js", "**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
