import type { ComponentChildren } from 'preact';
import { followLink } from '../router';

export function Link(props: { href: string; children: ComponentChildren; class?: string; current?: boolean }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props.current === true ? 'page' : undefined}
      onClick={(event) => followLink(event, props.href)}
    >
      {props.children}
    </a>
  );
}
