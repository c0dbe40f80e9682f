import { TranslatableString, type IconButtonProps, type TemplatesType } from '@rjsf/utils';

/**
 * rjsf's core buttons draw Glyphicons (a Bootstrap 3 font the studio does not ship): these draw a
 * character instead, named for assistive technology by their title ("Add", "Move up", …).
 */
function iconButton(label: TranslatableString, glyph: string, kind: string) {
  return function IconButton({ registry, uiSchema: _uiSchema, iconType: _iconType, icon: _icon, className, title, ...button }: IconButtonProps) {
    const name = title ?? registry.translateString(label);
    return (
      <button type="button" className={`btn btn-${kind} ${className ?? ''}`} title={name} aria-label={name} {...button}>
        <span aria-hidden="true">{glyph}</span>
      </button>
    );
  };
}

export const buttonTemplates: Partial<TemplatesType['ButtonTemplates']> = {
  AddButton: iconButton(TranslatableString.AddButton, '+ Add', 'add'),
  RemoveButton: iconButton(TranslatableString.RemoveButton, '\u2715', 'remove'),
  MoveUpButton: iconButton(TranslatableString.MoveUpButton, '\u2191', 'move'),
  MoveDownButton: iconButton(TranslatableString.MoveDownButton, '\u2193', 'move'),
  CopyButton: iconButton(TranslatableString.CopyButton, '\u2398', 'copy'),
  ClearButton: iconButton(TranslatableString.ClearButton, '\u2715', 'clear'),
};
