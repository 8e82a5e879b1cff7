//! XProf's `WrapDotInHtml` (`graphviz_helper.h`): the page that renders a DOT graph with
//! Graphviz in WebAssembly in the browser — `graph_viewer`'s `type=graph` and the memory
//! viewer's allocation timeline.

/// The page with `dot` laid out by `layout_engine` (`dot`, `neato`).
///
/// XProf pastes the DOT into a JavaScript template literal as is, so a backtick or `${`
/// in a name would end the literal and run as script. oxprof escapes `\`, `` ` `` and `${`
/// in that case only (the page then shows the same DOT), and is byte for byte XProf's page
/// otherwise.
pub fn wrap_dot_in_html(dot: &str, layout_engine: &str) -> String {
    let template = PAGE.replace("$LAYOUT_ENGINE", layout_engine);
    let escaped;
    let dot = if dot.contains('`') || dot.contains("${") {
        escaped = dot.replace('\\', "\\\\").replace('`', "\\`").replace("${", "\\${");
        escaped.as_str()
    } else {
        dot
    };
    match template.split_once("$DOT") {
        Some((head, tail)) => {
            let mut out = String::with_capacity(head.len() + dot.len() + tail.len());
            out.push_str(head);
            out.push_str(dot);
            out.push_str(tail);
            out
        }
        None => template,
    }
}

/// The page, with `$DOT` and `$LAYOUT_ENGINE` to fill in.
const PAGE: &str = r#"
<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <style type="text/css">
    body {
      height: 100vh;
      margin: 0;
    }
    #graph-container {height:95vh;width:100%;padding:10px;display:block;}
    #graph-container svg { height: 100% !important; width: 100% !important;}
    .node, .cluster {cursor:pointer;}
    .cluster:hover, .node:hover {outline: solid 3px black;}
  </style>
</head>
<body>
  <script src="https://www.gstatic.com/external_hosted/hpcc_js_wasm/index.min.js"
      integrity="sha384-LigJPbR3TOfU/Xbb+PjiN1dGJYPweLk7kiGnaMgmxnUmKWaCFKbb5tH6iLlyVhPZ"
      crossorigin="anonymous"></script>
  <script src="https://www.gstatic.com/external_hosted/svg_pan_zoom/svg-pan-zoom.js"></script>
  <div id="graph-container"></div>
  <script>
    const cssregex = new RegExp('stylesheet=<([^]*)\n>\n', 'gm');
    const hpccWasm = window["@hpcc-js/wasm"];
    const data = `$DOT`;
    const results = cssregex.exec(data);
    // graphviz has problem dealing with large stylesheets.
    // https://github.com/tensorflow/tensorflow/issues/17220#issuecomment-369228492
    // In order to avoid the problem, remove the stylesheet from the dot and
    // insert it directly info the rendered SVG.

    let dot_data = data;
    let css_data = '';
    if (results !== null) {
        css_data = results[1].replace(/\s*data:.*\s*,/,''); // Strip content-type field.
        // CSS inside DOT is URL-escaped, so we must unescape it
        // before we can insert it into SVG.
        css_data = unescape(css_data);
        dot_data = data.replace(cssregex, ''); // Remove the stylesheet
    }

    var render_start = performance.now()
    function add_controls(svg) {
        var htmlblob = new Blob([document.documentElement.innerHTML],
                                {type: 'text/html'});
        var savehtml = document.createElement('a');
        savehtml.setAttribute('href', URL.createObjectURL(htmlblob));
        savehtml.setAttribute('download', 'graph.html');
        savehtml.innerHTML = " [Save HTML+SVG] ";
        document.body.append(savehtml);
        var svgblob = new Blob([svg], {type: 'image/svg'});
        var savesvg = document.createElement('a');
        savesvg.setAttribute('href', URL.createObjectURL(svgblob));
        savesvg.setAttribute('download', 'graph.svg');
        savesvg.innerHTML = " [Save SVG] ";
        document.body.append(savesvg);
        var dotblob =  new Blob([data], {type: 'text/dot'});
        var savedot = document.createElement('a');
        savedot.setAttribute('href', URL.createObjectURL(dotblob));
        savedot.setAttribute('download', 'graph.dot');
        savedot.innerHTML = " [Save DOT] ";
        document.body.append(savedot);
        // Will get called after embed element was loaded
        var render_end = performance.now();
        var render_note = document.createElement('div')
        render_note.innerHTML = 'Rendering took '
                                + (render_end - render_start).toFixed(2) + "ms."
        document.body.append(render_note);
    }
    const render_callback = svg => {
      const container = document.getElementById('graph-container')
      container.innerHTML = `${svg}<style>${css_data}</style>`;
      const panZoom = svgPanZoom(container.children[0], {
        zoomEnabled: true,
        dblClickZoomEnabled: false,
        controlIconsEnabled: true,
        maxZoom: 200,
        minZoom: 0,
      });
      add_controls(svg);
    };
    hpccWasm.graphviz.layout(dot_data, "svg", "$LAYOUT_ENGINE").then(render_callback);
  </script>
</body>
</html>
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_is_pasted_as_is_unless_it_could_end_the_template_literal() {
        let page = wrap_dot_in_html("digraph G { a -> b }", "neato");
        assert!(page.contains("const data = `digraph G { a -> b }`;"));
        assert!(page.contains(r#"layout(dot_data, "svg", "neato")"#));
        let hostile = wrap_dot_in_html("digraph G { a -> `${x}` [label=\"a\\b\"] }", "dot");
        assert!(hostile.contains(r#"const data = `digraph G { a -> \`\${x}\` [label="a\\b"] }`;"#), "{hostile}");
    }
}
