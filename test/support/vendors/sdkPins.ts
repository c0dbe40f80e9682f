// The vendor SDKs of the README's table, at the versions it gives: the vendor SDK test runs them,
// the bench measures them. Both save them with these exact package.json dependencies, so npm
// resolves the same lock and a data folder sharing the kept packages reuses one install.
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface PinnedSdk {
  pkg: string;
  version: string;
  /** Other packages it needs beside it. */
  with?: Record<string, string>;
  /** How a function imports it, and the name that import binds. */
  imports: string;
  binds: string;
}

export const PINNED_SDKS: readonly PinnedSdk[] = [
  { pkg: 'openai', version: '7.59.0', imports: "import OpenAI from 'openai'", binds: 'OpenAI' },
  { pkg: '@anthropic-ai/sdk', version: '1.15.0', imports: "import Anthropic from '@anthropic-ai/sdk'", binds: 'Anthropic' },
  { pkg: 'stripe', version: '23.1.0', imports: "import Stripe from 'stripe'", binds: 'Stripe' },
  { pkg: '@octokit/rest', version: '22.0.1', imports: "import { Octokit } from '@octokit/rest'", binds: 'Octokit' },
  { pkg: 'resend', version: '6.38.0', imports: "import { Resend } from 'resend'", binds: 'Resend' },
  { pkg: 'groq-sdk', version: '1.6.0', imports: "import Groq from 'groq-sdk'", binds: 'Groq' },
  // It imports @opentelemetry/api as it loads, though npm counts it optional.
  { pkg: '@mistralai/mistralai', version: '2.7.0', with: { '@opentelemetry/api': '1.10.0' }, imports: "import { Mistral } from '@mistralai/mistralai'", binds: 'Mistral' },
  { pkg: '@notionhq/client', version: '5.26.0', imports: "import { Client } from '@notionhq/client'", binds: 'Client' },
  { pkg: '@google/genai', version: '3.3.0', imports: "import { GoogleGenAI } from '@google/genai'", binds: 'GoogleGenAI' },
  { pkg: '@linear/sdk', version: '98.0.0', imports: "import { LinearClient } from '@linear/sdk'", binds: 'LinearClient' },
];

export function pinnedSdk(pkg: string): PinnedSdk {
  const found = PINNED_SDKS.find((s) => s.pkg === pkg);
  if (!found) throw new Error(`${pkg} is not one of the pinned vendor SDKs`);
  return found;
}

/** package.json's dependencies for a function using `sdk`. */
export const sdkDependencies = (sdk: PinnedSdk): Record<string, string> => ({ [sdk.pkg]: sdk.version, ...sdk.with });

/**
 * A data folder's `packages` (npm's tarball cache and the installs, one per lock) kept between runs
 * on this machine: link it into a data folder, and a save after the machine's first only has npm
 * resolve, then takes the install made then for the same lock.
 */
export const KEPT_PACKAGES = join(homedir(), '.cache', 'callable-studio-ci', 'vendor-sdk-packages');
