import { LabIcon } from '@jupyterlab/ui-components';

// A chip with a bar chart on it; jp-icon3 lets the theme recolor it.
const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M7 5h10a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H7a2 2 0 0 1-2-2V7a2 2 0 0 1 2-2zm0 2v10h10V7z"/>
    <path d="M9 2h2v3H9zm4 0h2v3h-2zM9 19h2v3H9zm4 0h2v3h-2zM2 9h3v2H2zm0 4h3v2H2zm17-4h3v2h-3zm0 4h3v2h-3z"/>
    <path d="M8.5 15.5h1.6v-3H8.5zm2.7 0h1.6v-5h-1.6zm2.7 0h1.6V8.5h-1.6z"/>
  </g>
</svg>`;

export const hwsimIcon = new LabIcon({ name: 'jupyter-hwsim:what-if', svgstr });
