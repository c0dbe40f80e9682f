import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's order (by group, then by project name, then slowest or largest first), except that in
 * a group the files that each get a fresh process start before those that share one. The fresh
 * ones (the integration files with file-system faults) are among the long ones: started last,
 * they ran on after the shared files were done, with cores idle.
 */
export default class FreshFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification): number => spec.project.config.sequence.groupOrder * 2 + (spec.project.config.isolate ? 0 : 1);
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
