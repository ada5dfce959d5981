// Compiles DIR/workflows/*.ts with the Workflow DevKit's own StandaloneBuilder
// into DIR/out/{workflows.cjs,steps.cjs} and DIR/.well-known/workflow/v1/manifest.json.
// DIR needs a node_modules holding @workflow/builders and workflow.
// Used by TestBuildSources: node build.mjs DIR
import path from 'node:path';
import { StandaloneBuilder } from '@workflow/builders';

const workingDir = path.resolve(process.argv[2] ?? '.');
const builder = new StandaloneBuilder({
  buildTarget: 'standalone',
  workingDir,
  dirs: ['.'],
  stepsBundlePath: 'out/steps.cjs',
  workflowsBundlePath: 'out/workflows.cjs',
  webhookBundlePath: 'out/webhook.mjs',
});
await builder.build();
