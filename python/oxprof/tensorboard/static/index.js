// oxprof's tab in TensorBoard: oxprof's UI fills the tab, served by the plugin below its
// own routes (ui/: a proxy to `oxprof serve` on 127.0.0.1), so from TensorBoard's origin,
// the only one TensorBoard's pages may frame. TensorBoard loads this module in the tab's
// frame (its base URL is data/plugin/oxprof/) and calls render().
export async function render() {
  const style = document.createElement('style');
  style.textContent =
    'html, body { margin: 0; height: 100%; overflow: hidden; }' +
    ' iframe { display: block; width: 100%; height: 100%; border: 0; }';
  document.head.appendChild(style);
  const frame = document.createElement('iframe');
  frame.title = 'oxprof';
  frame.src = new URL('ui/', document.baseURI).href;
  document.body.appendChild(frame);
}
