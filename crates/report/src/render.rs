//! The templates (`templates/`), compiled into the binary, and rendering.

use std::fmt::Write;

use minijinja::{
    AutoEscape, Environment, Output, State, UndefinedBehavior, Value, context, escape_formatter,
};

use crate::Rendered;
use crate::error::{Error, Result};
use crate::view::Page;

const TEMPLATES: [(&str, &str); 4] = [
    ("report.html", include_str!("../templates/report.html.j2")),
    ("report.md", include_str!("../templates/report.md.j2")),
    ("figure.svg", include_str!("../templates/figure.svg.j2")),
    ("style.css", include_str!("../templates/style.css")),
];

/// A Markdown table cell: pipes escaped, on one line.
fn markdown_cell(value: String) -> String {
    value.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// HTML-escapes strings (`&`, `<`, `>`, `"`, `'`), leaving `/` as it is
/// (minijinja's default also escapes it, which makes every subject name
/// `openai&#x2f;gpt-5` in the page source).
fn html_formatter(
    out: &mut Output<'_>,
    state: &State<'_, '_>,
    value: &Value,
) -> Result<(), minijinja::Error> {
    let Some(text) = value
        .as_str()
        .filter(|_| state.auto_escape() == AutoEscape::Html && !value.is_safe())
    else {
        return escape_formatter(out, state, value);
    };
    for c in text.chars() {
        match c {
            '&' => out.write_str("&amp;"),
            '<' => out.write_str("&lt;"),
            '>' => out.write_str("&gt;"),
            '"' => out.write_str("&quot;"),
            '\'' => out.write_str("&#39;"),
            other => out.write_char(other),
        }
        .map_err(minijinja::Error::from)?;
    }
    Ok(())
}

fn environment() -> Result<Environment<'static>> {
    let mut environment = Environment::new();
    environment.set_undefined_behavior(UndefinedBehavior::Strict);
    environment.set_trim_blocks(true);
    environment.set_lstrip_blocks(true);
    environment.set_keep_trailing_newline(true);
    environment.set_auto_escape_callback(|name| {
        if name.ends_with(".html") || name.ends_with(".svg") {
            AutoEscape::Html
        } else {
            AutoEscape::None
        }
    });
    environment.set_formatter(html_formatter);
    environment.add_filter("cell", markdown_cell);
    for (name, source) in TEMPLATES {
        environment
            .add_template(name, source)
            .map_err(|source| Error::Template {
                template: name.to_string(),
                source,
            })?;
    }
    Ok(environment)
}

/// Renders the HTML and Markdown documents of `page`.
pub fn render(page: &Page) -> Result<Rendered> {
    let environment = environment()?;
    let one = |name: &str| {
        environment
            .get_template(name)
            .and_then(|template| template.render(context! { page }))
            .map_err(|source| Error::Template {
                template: name.to_string(),
                source,
            })
    };
    Ok(Rendered {
        html: one("report.html")?,
        markdown: one("report.md")?,
    })
}

#[cfg(test)]
mod tests {
    use minijinja::{Environment, context};

    #[test]
    fn html_escapes_markup_but_not_slashes_and_markdown_cells_escape_pipes() {
        let mut environment = Environment::new();
        environment.set_formatter(super::html_formatter);
        environment.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
        let rendered = environment
            .render_str("{{ name }}", context! { name => "openai/gpt-5 <b>&\"'" })
            .expect("render");
        assert_eq!(rendered, "openai/gpt-5 &lt;b&gt;&amp;&quot;&#39;");
        assert_eq!(super::markdown_cell("a|b\nc".into()), "a\\|b c");
    }
}
