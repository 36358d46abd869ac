import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStateDB } from '@jupyterlab/statedb';

import { hwsimIcon } from './icon';
import { HwsimPanel } from './panel';

const CommandIDs = {
  open: 'hwsim:open'
} as const;

const PANEL_ID = 'jupyter-hwsim-panel';

/** The "HW what-if" sidebar and the command that opens it. Needs no notebook and no kernel. */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-hwsim:plugin',
  description: 'A sidebar that shows why an ML pipeline is slow and what would make it faster.',
  autoStart: true,
  requires: [],
  optional: [ICommandPalette, INotebookTracker, IStateDB, ILayoutRestorer, IThemeManager],
  activate: (
    app: JupyterFrontEnd,
    palette: ICommandPalette | null,
    tracker: INotebookTracker | null,
    state: IStateDB | null,
    restorer: ILayoutRestorer | null,
    themes: IThemeManager | null
  ) => {
    const panel = new HwsimPanel({ tracker, state, restored: app.restored, themes });
    panel.id = PANEL_ID;
    panel.title.icon = hwsimIcon;
    panel.title.caption = 'HW what-if';
    app.shell.add(panel, 'left', { rank: 900 });
    // reopens the sidebar after a reload if it was open
    restorer?.add(panel, 'jupyter-hwsim');

    app.commands.addCommand(CommandIDs.open, {
      label: 'Open hardware what-if panel',
      caption: 'HW what-if: see why an ML pipeline is slow and what would make it faster',
      icon: hwsimIcon,
      execute: () => app.shell.activateById(PANEL_ID)
    });
    palette?.addItem({ command: CommandIDs.open, category: 'Hardware' });
  }
};

export default plugin;
